#!/usr/bin/env bash
# Run 4 (session 23): A/B of base (session 22's final), v2, v3, v3f (v3 with exact_finish
# reading in turn, as v2) and v3x (v3f with stage 1's band sums read after their tile's count
# and ceiling, as v2: only exact_bins' reads together), two rounds: run 3 had v3 about 1.7 µs
# slower than run 2 had v2 at flat B = 1.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run4.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in *-bench.gz; do gunzip -f $f; done; chmod +x *-bench run.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:1,heterogeneous:f32:128256:1,topk50_topp09_t07:f32:128256:1"
AB_SECONDS=70 timeout 330 bash ./run.sh ab $W/ab "$CELLS" 2 base=./base-bench v2=./v2-bench v3=./v3-bench v3f=./v3f-bench v3x=./v3x-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
echo "elapsed $(( $(date +%s) - START ))"
