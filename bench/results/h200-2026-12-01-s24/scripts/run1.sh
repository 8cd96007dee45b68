#!/usr/bin/env bash
# Run 1 (session 24): v2 (stage 2's early exit for top-p rows whose nucleus no merge of the
# lists could hold, the windowed sub-bin edge search, boundary_band's per-band u64 sums) under
# every GPU test; A/B of base (session 23's final kernels), v1 (the early exit alone) and v2,
# two rounds; Nsight summaries of flat top-p 0.95, V = 128256, B = 1 and 64 on v2.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run1.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in tests/*.gz *.gz; do gunzip -f $f; done; chmod +x tests/* *-bench sonic-soak run.sh; cp v2-bench sonic-bench
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
timeout 220 bash ./run.sh > $W/tests.log 2>&1; trc=$?; echo "tests rc $trc $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "FAILED|panicked|mismatch|differ" $W/tests.log | head -20
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:1,flat_topp095:f32:151936:64,flat_full:f32:128256:64,peaked_topp095:f32:128256:64,heterogeneous:f32:128256:1,heterogeneous:f32:128256:64"
AB_SECONDS=80 timeout 300 bash ./run.sh ab $W/ab "$CELLS" 2 base=./base-bench v1=./v1-bench v2=./v2-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
for cell in flat_topp095:f32:128256:1 flat_topp095:f32:128256:64; do
  left=$(( 560 - ($(date +%s) - START) )); [ $left -gt 45 ] || break
  timeout 40 bash ./run.sh profile $cell $W/profile > $W/profile-$(echo $cell | tr ':' '-').log 2>&1; echo "profile $cell rc $? $(( $(date +%s) - START ))s"
  grep -E "^  [a-z_]+ \(|Duration" $W/profile/$(echo $cell | tr ':' '-')-summary.txt | paste - - | awk '{print $1, $(NF-1), $NF}'
done
rm -f $W/profile/*.ncu-rep
echo "elapsed $(( $(date +%s) - START ))"
