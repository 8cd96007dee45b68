#!/usr/bin/env bash
# Run 2 (session 24): v3 (v2 plus summarize adding the fraction sums per row band in shared
# memory, where boundary_band reads them again, and exact_bins' per-tile sure masses two tiles
# a turn) under every GPU test; A/B of base (session 23's final kernels), v2 and v3, two rounds.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run2.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in tests/*.gz *.gz; do gunzip -f $f; done; chmod +x tests/* *-bench sonic-soak run.sh; cp v3-bench sonic-bench
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
timeout 220 bash ./run.sh > $W/tests.log 2>&1; trc=$?; echo "tests rc $trc $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "FAILED|panicked|mismatch|differ" $W/tests.log | head -20
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:1,flat_topp095:f32:151936:64,flat_full:f32:128256:1,flat_full:f32:128256:64,random_full:f32:128256:64,peaked_topp095:f32:128256:64,heterogeneous:f32:128256:1,heterogeneous:f32:128256:64,topk50_topp09_t07:f32:128256:1"
AB_SECONDS=80 timeout 340 bash ./run.sh ab $W/ab "$CELLS" 2 base=./base-bench v2=./v2-bench v3=./v3-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
echo "elapsed $(( $(date +%s) - START ))"
