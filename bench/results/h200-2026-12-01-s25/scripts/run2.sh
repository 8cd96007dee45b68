#!/usr/bin/env bash
# Run 2 (session 25): every GPU test on k4 (cd48875); A/B of base (session 24's final,
# cf52b3f), k2 (run 1's), k3 (k2 with the sort out of line, bada4f9) and k4 (k3 with
# sample_tiles_mass's whole waves first, cd48875); compute-sanitizer over the five test
# binaries (k4) with the time left.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run2.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in tests/*.gz base-bench.gz k2-bench.gz k3-bench.gz k4-bench.gz; do gunzip -f $f; done; chmod +x tests/* *-bench run.sh; cp k4-bench sonic-bench
md5sum *-bench tests/* > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
timeout 220 bash ./run.sh > $W/tests.log 2>&1; trc=$?; echo "tests rc $trc $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "FAILED|panicked|mismatch|differ" $W/tests.log | head -20
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:64,flat_full:f32:128256:1,flat_full:f32:151936:64,heterogeneous:f32:128256:1,heterogeneous:f32:128256:64,topk50_topp09_t07:f32:128256:1,peaked_topp095:f32:128256:64,random_full:f32:151936:64,greedy:f32:128256:1"
AB_SECONDS=80 timeout 250 bash ./run.sh ab $W/ab "$CELLS" 2 base=./base-bench k2=./k2-bench k3=./k3-bench k4=./k4-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
left=$(( 565 - ($(date +%s) - START) )); echo "sanitizer budget $left s"
if [ $trc -eq 0 ] && [ $left -gt 60 ]; then
  SANITIZE_SECONDS=$left timeout $((left + 15)) bash ./run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "sanitize rc $? $(( $(date +%s) - START ))s"
  cat $W/sanitizer/summary.txt
fi
echo "elapsed $(( $(date +%s) - START ))"
