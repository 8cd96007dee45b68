#!/usr/bin/env bash
# Run 2 (session 28): v1 = 5a23328 (warp rows in exact_histogram / exact_gather). The new
# warp-path test first (stop if it fails), then gpu_sampler and gpu_reliability whole; A/B of
# base (c537bc8, session 27's kernels) and v1; Nsight summaries of v1 at flat top-p B 64, 256;
# memcheck and racecheck of the new test.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run2.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in tests/*.gz *.gz; do gunzip -f $f; done; chmod +x tests/* *-bench sonic-bench run.sh
md5sum *-bench sonic-bench tests/* > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
T=gpu_band_rows_taken_a_warp_per_tile_part_equal_reference
timeout 150 ./tests/gpu_sampler $T --test-threads=1 --nocapture > $W/warp-test.log 2>&1; rc=$?; echo "warp test rc $rc $(( $(date +%s) - START ))s"; grep -E "test result|panicked|rows split|row [0-9]+:" $W/warp-test.log | head -30
[ $rc -eq 0 ] || exit 1
timeout 260 bash ./run.sh > $W/tests.log 2>&1; trc=$?; echo "tests rc $trc $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "FAILED|panicked|mismatch|differ" $W/tests.log | head -20
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:64,flat_topp095:f32:151936:256,flat_full:f32:128256:64,peaked_topp095:f32:128256:64,heterogeneous:f32:128256:64,topk50_topp09_t07:f32:128256:1"
AB_SECONDS=100 timeout 260 bash ./run.sh ab $W/ab "$CELLS" 2 base=./base-bench v1=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
for cell in flat_topp095:f32:128256:256 flat_topp095:f32:128256:64; do
  left=$(( 560 - ($(date +%s) - START) )); [ $left -gt 40 ] || break
  timeout $left bash ./run.sh profile $cell $W/profile > $W/profile-$(echo $cell | tr ':' '-').log 2>&1; echo "profile $cell rc $? $(( $(date +%s) - START ))s"
done
rm -f $W/profile/*.ncu-rep
for f in $W/profile/*summary*.txt; do echo "== $f"; grep -E '^  [a-z_]+ \(|Duration' $f | paste - - | awk '{print $1, $NF}'; done
export SONIC_SANITIZE=1
for tool in memcheck racecheck; do
  left=$(( 585 - ($(date +%s) - START) )); [ $left -gt 20 ] || break
  timeout $left compute-sanitizer --tool $tool --error-exitcode 1 ./tests/gpu_sampler $T --test-threads=1 > $W/$tool-warp.log 2>&1; echo "$tool rc $? $(( $(date +%s) - START ))s"; grep -E "SUMMARY|test result" $W/$tool-warp.log
done
echo "elapsed $(( $(date +%s) - START ))"
