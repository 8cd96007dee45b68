#!/usr/bin/env bash
# Run 3 (session 24): A/B of base (session 23's final kernels), v2 (run 1), v4 (v3 with the
# early exit through the merge's None path) and v5 (v4 with session 23's summarize and
# boundary_band adding its own u64 sums), two rounds, on the exact pass's cells and on rows
# whose path did not change (B = 1: flat_full, heterogeneous, top-k 50 + top-p, greedy).
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run3.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in base-bench.gz v2-bench.gz v4-bench.gz v5-bench.gz; do gunzip -f $f; done; chmod +x *-bench run.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:1,flat_full:f32:128256:1,flat_full:f32:128256:64,heterogeneous:f32:128256:1,heterogeneous:f32:128256:64,topk50_topp09_t07:f32:128256:1,greedy:f32:128256:1"
AB_SECONDS=80 timeout 420 bash ./run.sh ab $W/ab "$CELLS" 2 base=./base-bench v2=./v2-bench v4=./v4-bench v5=./v5-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
echo "elapsed $(( $(date +%s) - START ))"
