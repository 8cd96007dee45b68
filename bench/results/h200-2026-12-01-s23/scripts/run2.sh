#!/usr/bin/env bash
# Run 2 (session 23): v2 (v1 plus the block sort in registers up to one key a thread) under
# every GPU test; A/B of base (session 22's final), v1 and v2, two rounds; Nsight summary of
# flat top-p 0.95 B = 64 on v2; source counters of exact_histogram and exact_gather at
# flat B = 256 on v2.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run2.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in tests/*.gz *.gz; do gunzip -f $f; done; chmod +x tests/* *-bench sonic-soak run.sh; cp v2-bench sonic-bench
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
timeout 220 bash ./run.sh > $W/tests.log 2>&1; trc=$?; echo "tests rc $trc $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "FAILED|panicked|mismatch|differ" $W/tests.log | head -20
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:1,peaked_topp095:f32:128256:64,heterogeneous:f32:128256:1,heterogeneous:f32:128256:64,topk50_topp09_t07:f32:128256:1,topk50_topp09_t07:f32:128256:64,verify_hetero:f32:128256:8"
AB_SECONDS=70 timeout 230 bash ./run.sh ab $W/ab "$CELLS" 2 base=./base-bench v1=./v1-bench v2=./v2-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
for cell in flat_topp095:f32:128256:64; do
  timeout 40 bash ./run.sh profile $cell $W/profile > $W/profile-$(echo $cell | tr ':' '-').log 2>&1; echo "profile $cell rc $? $(( $(date +%s) - START ))s"
  grep -E "^  [a-z_]+ \(|Duration" $W/profile/$(echo $cell | tr ':' '-')-summary.txt | paste - - | awk '{print $1, $(NF-1), $NF}'
done
rm -f $W/profile/*.ncu-rep
for k in exact_histogram exact_gather; do
  left=$(( 570 - ($(date +%s) - START) )); [ $left -gt 40 ] || break
  NCU_EXTRA="--warp-sampling-interval 0" timeout 50 bash ./run.sh profile-source flat_topp095:f32:128256:256 $k $W/source > $W/source-$k.log 2>&1; echo "source $k rc $? $(( $(date +%s) - START ))s"; tail -3 $W/source-$k.log
done
echo "elapsed $(( $(date +%s) - START ))"
