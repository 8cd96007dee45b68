#!/usr/bin/env bash
# Run 1 (session 20): vi (2367e3b: row groups take rows in turn + verify_rows' lean first pass
# and float floor tests) under every GPU test; vj (vi with the group's early rejection check)
# under gpu_verify; A/B of base (171150e = session 19's final kernels), vh (866776c: row groups
# alone), vi and vj, two rounds, alternating.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run1.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in tests/*.gz *.gz; do gunzip -f $f; done; chmod +x tests/* *-bench vj-gpu_verify sonic-soak run.sh; cp vi-bench sonic-bench
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
timeout 230 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "FAILED|panicked|mismatch|differ|skipped" $W/tests.log | head -12
timeout 90 ./vj-gpu_verify --test-threads=1 > $W/vj-gpu_verify.log 2>&1; echo "vj gpu_verify rc $? $(( $(date +%s) - START ))s"; grep -E "test result|FAILED|skipped" $W/vj-gpu_verify.log | head -8
CELLS="verify_hetero:f32:128256:1,verify_hetero:f32:128256:8,verify_hetero:f32:128256:32,verify_hetero:f32:128256:128,verify_hetero:f32:151936:32,verify_uniform:f32:128256:8,verify_uniform:f32:128256:32,verify_uniform:f32:128256:128,verify_accepted:f32:128256:8,verify_accepted:f32:128256:32,verify_accept70:f32:128256:32,verify_sampled:f32:128256:8,verify_sampled:f32:128256:32,verify_sampled:f32:128256:128"
AB_SECONDS=70 timeout $(( 580 - ($(date +%s) - START) )) bash ./run.sh ab $W/ab "$CELLS" 2 base=./base-bench vh=./vh-bench vi=./vi-bench vj=./vj-bench > $W/ab.log 2>&1; echo "ab rc $?"; cat $W/ab/ab-table.txt
echo "elapsed $(( $(date +%s) - START ))"
