#!/usr/bin/env bash
# Run 3 (session 20): vm (d24d01d: vk + residual_once inline weight + verify_chains in batches
# of eight rows) under every GPU test; A/B of base (171150e) and vm, two rounds, alternating;
# the whole grid on vm.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run3.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in tests/*.gz *.gz; do gunzip -f $f; done; chmod +x tests/* *-bench sonic-soak run.sh; cp vm-bench sonic-bench
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
timeout 230 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "FAILED|panicked|mismatch|differ|groups of" $W/tests.log | head -12
CELLS="verify_hetero:f32:128256:1,verify_hetero:f32:128256:8,verify_hetero:f32:128256:32,verify_hetero:f32:128256:128,verify_hetero:f32:151936:8,verify_hetero:f32:151936:32,verify_uniform:f32:128256:1,verify_uniform:f32:128256:8,verify_uniform:f32:128256:32,verify_uniform:f32:128256:128,verify_accepted:f32:128256:1,verify_accepted:f32:128256:8,verify_accepted:f32:128256:32,verify_accept70:f32:128256:8,verify_accept70:f32:128256:32,verify_sampled:f32:128256:8,verify_sampled:f32:128256:32,verify_sampled:f32:128256:128"
AB_SECONDS=70 timeout 250 bash ./run.sh ab $W/ab "$CELLS" 2 base=./base-bench vm=./vm-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
left=$(( 585 - ($(date +%s) - START) )); echo "grid budget $left s"
timeout $left bash ./run.sh bench --out $W/grid > $W/bench-stdout.log 2>&1; echo "bench rc $?"; tail -1 $W/bench-stdout.log
echo "elapsed $(( $(date +%s) - START ))"
