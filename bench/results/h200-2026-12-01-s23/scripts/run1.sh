#!/usr/bin/env bash
# Run 1 (session 23): v1 (finish keys spread one a thread, exact_finish two per SM above one row
# per SM, the band histogram branch-free, exact_bins' loads in flight together, verification's
# binned selection spread the same way) under every GPU test; A/B of base (session 22's final
# kernels, v3) and v1, two rounds; Nsight summaries of flat top-p 0.95 B = 1 and 256 on v1;
# source counters of exact_finish and exact_bins at B = 1 on v1.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run1.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in tests/*.gz *.gz; do gunzip -f $f; done; chmod +x tests/* *-bench sonic-soak run.sh; cp v1-bench sonic-bench
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
timeout 220 bash ./run.sh > $W/tests.log 2>&1; trc=$?; echo "tests rc $trc $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "FAILED|panicked|mismatch|differ|test result" $W/tests.log | head -20
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:256,flat_full:f32:128256:256,peaked_topp095:f32:128256:256,heterogeneous:f32:128256:64,heterogeneous:f32:128256:1024,verify_hetero:f32:128256:8,verify_hetero:f32:128256:32"
AB_SECONDS=80 timeout 170 bash ./run.sh ab $W/ab "$CELLS" 2 base=./base-bench v1=./v1-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
for cell in flat_topp095:f32:128256:1 flat_topp095:f32:128256:256; do
  timeout 40 bash ./run.sh profile $cell $W/profile > $W/profile-$(echo $cell | tr ':' '-').log 2>&1; echo "profile $cell rc $? $(( $(date +%s) - START ))s"
  grep -E "^  [a-z_]+ \(|Duration" $W/profile/$(echo $cell | tr ':' '-')-summary.txt | paste - - | awk '{print $1, $(NF-1), $NF}'
done
rm -f $W/profile/*.ncu-rep
for k in exact_finish exact_bins; do
  left=$(( 560 - ($(date +%s) - START) )); [ $left -gt 40 ] || break
  NCU_EXTRA="--warp-sampling-interval 0" timeout 45 bash ./run.sh profile-source flat_topp095:f32:128256:1 $k $W/source > $W/source-$k.log 2>&1; echo "source $k rc $? $(( $(date +%s) - START ))s"; tail -3 $W/source-$k.log
done
echo "elapsed $(( $(date +%s) - START ))"
