#!/usr/bin/env bash
# Run 3 (session 23): A/B of base (session 22's final), v3 (v2 plus the row kernels' reads
# issued together and stage 1's band sums read with their count and ceiling), v4a (v3 plus the
# gather reading the next item's row as an item starts) and v4b (v4a plus the gather asking
# L2 for its next item's tile), two rounds.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run3.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in *-bench.gz; do gunzip -f $f; done; chmod +x *-bench run.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:1,peaked_topp095:f32:128256:256,heterogeneous:f32:128256:64,heterogeneous:f32:128256:1024"
AB_SECONDS=70 timeout 300 bash ./run.sh ab $W/ab "$CELLS" 2 base=./base-bench v3=./v3-bench v4a=./v4a-bench v4b=./v4b-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
echo "elapsed $(( $(date +%s) - START ))"
