#!/usr/bin/env bash
# Run 5 (session 29): v6 = warp runs over padded rows (tiles · 16 rounds), rounded to tile
# quarters, halves or multiples when that costs at most 2 rounds; u32 arithmetic and the run's
# end in shared memory (8-byte stack frames left, from a hoisted row stride). d7 = main with a
# 16-byte stack frame (black_box) in exact_histogram and exact_gather and nothing else.
# gpu_sampler whole on v6; A/B of base, d7, v3, v5a, v6; Nsight summaries of v6.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run5.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz; do unxz $f; done; chmod +x tests/* *-bench run.sh
md5sum *-bench tests/* > $W/md5.txt
REQUIRE_GPU=1 timeout 200 ./tests/gpu_sampler --test-threads=1 --nocapture > $W/test-gpu_sampler.log 2>&1; rc=$?; echo "gpu_sampler (v6) rc $rc $(( $(date +%s) - START ))s"; grep -E "test result|panicked|run |row [0-9]+:" $W/test-gpu_sampler.log | head -30
V6="v6=./v6-bench"; [ $rc -eq 0 ] || V6=""
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:64,flat_topp095:f32:151936:256,peaked_topp095:f32:128256:64,peaked_topp095:f32:128256:256,heterogeneous:f32:128256:64,flat_full:f32:128256:64,flat_topp095:f32:151936:1,flat_topp095:f32:128256:8"
AB_SECONDS=80 timeout 400 bash ./run.sh ab $W/ab "$CELLS" 3 base=./base-bench d7=./d7-bench v3=./v3-bench v5a=./v5a-bench $V6 > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
[ -n "$V6" ] && cp v6-bench sonic-bench && for cell in flat_topp095:f32:128256:256 flat_topp095:f32:128256:64 flat_topp095:f32:151936:64; do
  timeout 60 bash ./run.sh profile $cell $W/profile-v6 > $W/profile-v6-$(echo $cell | tr ':' '-').log 2>&1; echo "profile v6 $cell rc $? $(( $(date +%s) - START ))s"
done
rm -f $W/profile-*/*.ncu-rep
for f in $W/profile-*/*summary*.txt; do echo "== $f"; grep -E '^  [a-z_]+ \(|Duration' $f | paste - - | awk '{printf "%s %s; ", $1, $NF}'; echo; done
echo "elapsed $(( $(date +%s) - START ))"
