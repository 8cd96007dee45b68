#!/usr/bin/env bash
# Run 6 (session 31): run 5's synccheck run of gpu_sampler had a token mismatch in the new
# test (V 151936 f16, step 1, row 2). The test again with that seed (reduced sizes, no
# sanitizer), now printing the token of the sampler that builds every list too; then four
# runs with fresh seeds at reduced sizes and one at full size.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run6.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz; do unxz $f; done; chmod +x tests/*
md5sum tests/* > $W/md5.txt
T=gpu_lists_skipped_after_a_wide_step_equal_reference
SONIC_TEST_SEED=1796184396716061558 SONIC_SANITIZE=1 timeout 60 ./tests/gpu_sampler $T --exact --nocapture > $W/seed.log 2>&1; echo "seed rc $?"; grep -E "row [0-9]+:|listed beyond|test result" $W/seed.log
for i in 1 2 3 4; do SONIC_SANITIZE=1 timeout 60 ./tests/gpu_sampler $T --exact --nocapture > $W/fresh$i.log 2>&1; echo "fresh$i rc $?"; grep -E "SONIC_TEST_SEED|row [0-9]+:|listed beyond|test result" $W/fresh$i.log; done
timeout 90 ./tests/gpu_sampler $T --exact --nocapture > $W/full.log 2>&1; echo "full rc $?"; grep -E "SONIC_TEST_SEED|row [0-9]+:|listed beyond|test result" $W/full.log
echo "elapsed $(( $(date +%s) - START ))"
