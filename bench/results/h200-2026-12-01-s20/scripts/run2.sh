#!/usr/bin/env bash
# Run 2 (session 20): vk (51ce287: row groups in turn only for calls at least half random,
# with the check before the first pass; the rejection word read only by such groups) under
# every GPU test; A/B of base (171150e), vk and vl (vk + residual_once with key_weight_inline),
# two rounds; Nsight summaries of verify_uniform and verify_hetero at V = 128256, B = 32 on vk.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run2.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in tests/*.gz *.gz; do gunzip -f $f; done; chmod +x tests/* *-bench sonic-soak run.sh; cp vk-bench sonic-bench
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
timeout 230 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "FAILED|panicked|mismatch|differ|skipped|groups of" $W/tests.log | head -12
CELLS="verify_hetero:f32:128256:1,verify_hetero:f32:128256:8,verify_hetero:f32:128256:32,verify_hetero:f32:128256:128,verify_hetero:f32:151936:8,verify_hetero:f32:151936:32,verify_uniform:f32:128256:8,verify_uniform:f32:128256:32,verify_uniform:f32:128256:128,verify_accepted:f32:128256:8,verify_accepted:f32:128256:32,verify_accept70:f32:128256:32,verify_sampled:f32:128256:8,verify_sampled:f32:128256:32,verify_sampled:f32:128256:128"
AB_SECONDS=70 timeout 300 bash ./run.sh ab $W/ab "$CELLS" 2 base=./base-bench vk=./vk-bench vl=./vl-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
for cell in verify_uniform:f32:128256:32 verify_hetero:f32:128256:32; do
  n=${cell//:/-}; mkdir -p $W/prof
  timeout 80 ncu --clock-control none --graph-profiling node -k "regex:verify_" --launch-skip 30 --launch-count 3 --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats -f -o $W/prof/$n ./sonic-bench --only $cell --replays 100 --out $W/prof/bench-$n > $W/prof/$n.log 2>&1; echo "prof $cell rc $? $(( $(date +%s) - START ))s"
  ncu --import $W/prof/$n.ncu-rep --page details > $W/prof/$n-details.txt 2>&1; grep -E "^  [a-z_]+ \(|Duration|DRAM Throughput" $W/prof/$n-details.txt | tee $W/prof/$n-summary.txt; rm -f $W/prof/$n.ncu-rep
done
echo "elapsed $(( $(date +%s) - START ))"
