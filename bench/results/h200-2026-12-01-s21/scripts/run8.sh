#!/usr/bin/env bash
# Run 8 (session 21): v5 (18785df: exact_gather builds keys only for staged tokens and reads
# its metadata with plain loads) under gpu_sampler and gpu_reliability; A/B of v4 (7eeb7a7)
# and v5, two rounds; compute-sanitizer memcheck and racecheck over those two binaries on v5.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run8.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in tests/*.gz *.gz; do gunzip -f $f; done; chmod +x tests/* *-bench run.sh; cp v5-bench sonic-bench
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
timeout 120 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "FAILED|panicked|mismatch|differ" $W/tests.log | head -12
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:256,peaked_topp095:f32:128256:256,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,heterogeneous:f32:128256:1024,random_full:f32:128256:256"
AB_SECONDS=60 timeout 130 bash ./run.sh ab $W/ab "$CELLS" 2 v4=./v4-bench v5=./v5-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
left=$(( 330 - ($(date +%s) - START) )); echo "sanitizer budget $left s"
SANITIZE_TOOLS="memcheck racecheck" SANITIZE_SECONDS=$left timeout $((left + 15)) bash ./run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "sanitize rc $? $(( $(date +%s) - START ))s"; tail -8 $W/sanitizer/summary.txt 2>/dev/null
echo "elapsed $(( $(date +%s) - START ))"
