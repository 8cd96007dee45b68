#!/usr/bin/env bash
# Run 5 (session 21): v4 (the final exact_histogram: plain metadata loads, the list two items
# ahead, the next item's logits asked of L2, reaches_floor, items stepped without a division)
# under every GPU test; A/B of base (0557735, vm's PTX) and v4, two rounds; compute-sanitizer
# (four tools, five binaries, reduced sizes) on v4.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run5.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in tests/*.gz *.gz; do gunzip -f $f; done; chmod +x tests/* *-bench run.sh; cp v4-bench sonic-bench
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
timeout 230 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "FAILED|panicked|mismatch|differ" $W/tests.log | head -12
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:256,peaked_topp095:f32:128256:256,heterogeneous:f32:128256:8,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,heterogeneous:f32:128256:1024,random_full:f32:128256:256,topk50_topp09_t07:f32:128256:1"
AB_SECONDS=80 timeout 200 bash ./run.sh ab $W/ab "$CELLS" 2 base=./base-bench v4=./v4-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
left=$(( 570 - ($(date +%s) - START) )); echo "sanitizer budget $left s"
SANITIZE_SECONDS=$left timeout $((left + 20)) bash ./run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "sanitize rc $? $(( $(date +%s) - START ))s"; cat $W/sanitizer/summary.txt 2>/dev/null | tail -25
echo "elapsed $(( $(date +%s) - START ))"
