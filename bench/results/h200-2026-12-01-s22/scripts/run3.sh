#!/usr/bin/env bash
# Run 3 (session 22): v3 (14fb53d: the band gather without barriers, a warp's own reservation;
# run 2's histogram packing and reversed gather dropped) under every GPU test; A/B of base
# (dc35e17) and v3, two rounds; v3's grid; Nsight summaries of flat top-p 0.95
# B = 1 and 256; memcheck and racecheck over gpu_sampler and gpu_reliability on v3, and
# racecheck over base's gpu_sampler (run 2's racecheck of v2's gpu_sampler ended in a host
# crash, rc 11, with no hazard); a soak on v3 with the time left.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run3.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in tests/*.gz *.gz; do gunzip -f $f; done; chmod +x tests/* *-bench sonic-soak base-gpu_sampler run.sh; cp v3-bench sonic-bench
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
timeout 200 bash ./run.sh > $W/tests.log 2>&1; trc=$?; echo "tests rc $trc $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "FAILED|panicked|mismatch|differ" $W/tests.log | head -20
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:256,peaked_topp095:f32:128256:256,heterogeneous:f32:128256:64,heterogeneous:f32:128256:1024,topk50_topp09_t07:f32:128256:1"
AB_SECONDS=80 timeout 150 bash ./run.sh ab $W/ab "$CELLS" 2 base=./base-bench v3=./v3-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
timeout 100 bash ./run.sh bench --out $W/grid > $W/bench-stdout.log 2>&1; echo "bench rc $? $(( $(date +%s) - START ))s"; tail -1 $W/bench-stdout.log
sed -n '/## Exact pass against/,/^## Spec/p' $W/grid/sonic-bench.md | head -14
for cell in flat_topp095:f32:128256:1 flat_topp095:f32:128256:256; do
  timeout 40 bash ./run.sh profile $cell $W/profile > $W/profile-$(echo $cell | tr ':' '-').log 2>&1; echo "profile $cell rc $? $(( $(date +%s) - START ))s"
  grep -E "^  [a-z_]+ \(|Duration" $W/profile/$(echo $cell | tr ':' '-')-summary.txt | paste - - | awk '{print $1, $(NF-1), $NF}'
done
rm -f $W/profile/*.ncu-rep
if [ $trc -eq 0 ]; then
  mkdir -p san/tests base-san/tests; cp run.sh san/; cp run.sh base-san/
  ln -sf $PWD/tests/gpu_sampler san/tests/gpu_sampler; ln -sf $PWD/tests/gpu_reliability san/tests/gpu_reliability
  ln -sf $PWD/base-gpu_sampler base-san/tests/gpu_sampler
  left=$(( 420 - ($(date +%s) - START) )); echo "sanitizer budget $left s"
  (SANITIZE_TOOLS="racecheck memcheck" SANITIZE_SECONDS=$left timeout $((left + 15)) bash san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "sanitize v3 rc $?" > $W/sanitize.rc) &
  (SANITIZE_TOOLS="racecheck" SANITIZE_SECONDS=$left timeout $((left + 15)) bash base-san/run.sh sanitize $W/sanitizer-base > $W/sanitize-base.log 2>&1; echo "sanitize base rc $?" > $W/sanitize-base.rc) &
  wait; echo "sanitizers done $(( $(date +%s) - START ))s"; cat $W/sanitize.rc $W/sanitize-base.rc
  tail -7 $W/sanitizer/summary.txt; tail -4 $W/sanitizer-base/summary.txt
fi
left=$(( 575 - ($(date +%s) - START) )); echo "soak budget $left s"
if [ $left -gt 50 ]; then
  (timeout $left ./run.sh soak --seconds $((left - 35)) --out $W/soak > $W/soak.log 2>&1); echo "soak rc $? $(( $(date +%s) - START ))s"; tail -14 $W/soak.log
fi
echo "elapsed $(( $(date +%s) - START ))"
