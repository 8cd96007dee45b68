#!/usr/bin/env bash
# Run 7 (session 31): f8 = f6 with stage 2's slot-flag write moved after summarize's barriers
# (run 5's synccheck mismatch: the write as a row started raced with other warps' reads of the
# flag). The new test with run 5's seed under synccheck; the five GPU test binaries; memcheck
# and synccheck over them; A/B of base (v13) and f8, three rounds; the whole grid on f8.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run7.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz; do unxz $f; done; chmod +x tests/* *-bench sonic-bench run.sh
md5sum *-bench sonic-bench tests/* > $W/md5.txt
T=gpu_lists_skipped_after_a_wide_step_equal_reference
SONIC_TEST_SEED=1796184396716061558 SONIC_SANITIZE=1 timeout 90 compute-sanitizer --tool synccheck --error-exitcode 1 ./tests/gpu_sampler $T --exact --nocapture > $W/seed-synccheck.log 2>&1; echo "seed synccheck rc $? $(( $(date +%s) - START ))s"; grep -E "row [0-9]+:|listed beyond|test result|ERROR SUMMARY" $W/seed-synccheck.log
timeout 200 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch" $W/tests.log | head -12
SANITIZE_TOOLS="memcheck synccheck" SANITIZE_SECONDS=150 timeout 160 bash ./run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "sanitize rc $? $(( $(date +%s) - START ))s"; cat $W/sanitizer/summary.txt
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:64,flat_topp095:f32:151936:256,flat_full:f32:128256:1,flat_full:f32:128256:64,flat_full:f32:128256:256,random_full:f32:128256:256,peaked_topp095:f32:128256:64,peaked_topp095:f32:128256:256,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,topk50_topp09_t07:f32:128256:256"
AB_SECONDS=60 timeout 120 bash ./run.sh ab $W/ab "$CELLS" 3 base=./base-bench f8=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
timeout 80 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(( $(date +%s) - START ))s"; grep -A10 "Exact pass against" $W/grid/sonic-bench.md | tail -8
echo "elapsed $(( $(date +%s) - START ))"
