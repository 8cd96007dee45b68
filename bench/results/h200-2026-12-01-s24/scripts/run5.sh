#!/usr/bin/env bash
# Run 5 (session 24): a 90 s soak on the final build (cf52b3f; sonic-soak from its bundle), and
# an A/B of base (session 23's final kernels) and the final build on cells that take no band
# mode, two rounds.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run5.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in base-bench.gz v2-bench.gz sonic-soak.gz; do gunzip -f $f; done; chmod +x *-bench sonic-soak run.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
(timeout 160 ./run.sh soak --seconds 90 --out $W/soak > $W/soak.log 2>&1); echo "soak rc $? $(( $(date +%s) - START ))s"; tail -25 $W/soak.log
CELLS="peaked_topp095:f32:128256:256,topk50_topp09_t07:f32:128256:64,heterogeneous:f32:128256:1024,random_full:f32:128256:1,verify_hetero:f32:128256:8,greedy:f32:128256:64"
AB_SECONDS=80 timeout 200 bash ./run.sh ab $W/ab "$CELLS" 2 base=./base-bench final=./v2-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
echo "elapsed $(( $(date +%s) - START ))"
