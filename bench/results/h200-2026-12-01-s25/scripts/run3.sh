#!/usr/bin/env bash
# Run 3 (session 25): the final build (bada4f9 = run 2's k3; the bench binary is the same, md5)
# under every GPU test; its grid; an A/B of base and the final build on B <= 8 cells; racecheck
# over the five test binaries with the time left (run 2's racecheck of gpu_topk ran out of time).
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run3.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in tests/*.gz *.gz; do gunzip -f $f; done; chmod +x tests/* *-bench sonic-soak run.sh; cp k3-bench sonic-bench
md5sum *-bench sonic-bench tests/* > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
timeout 230 bash ./run.sh > $W/tests.log 2>&1; trc=$?; echo "tests rc $trc $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "FAILED|panicked|mismatch|differ" $W/tests.log | head -20
timeout 120 bash ./run.sh bench --out $W/grid > $W/bench-stdout.log 2>&1; echo "bench rc $? $(( $(date +%s) - START ))s"; tail -1 $W/bench-stdout.log
sed -n '/## Exact pass against/,/^## Spec/p' $W/grid/sonic-bench.md | head -14
CELLS="random_full:f32:128256:8,topk50_topp09_t07:f32:128256:8,heterogeneous:f32:128256:8,topk50_topp09_t07:f32:128256:1,flat_topp095:f32:128256:1"
AB_SECONDS=60 timeout 100 bash ./run.sh ab $W/ab "$CELLS" 2 base=./base-bench final=./k3-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
left=$(( 560 - ($(date +%s) - START) )); echo "racecheck budget $left s"
if [ $trc -eq 0 ] && [ $left -gt 60 ]; then
  SANITIZE_TOOLS=racecheck SANITIZE_SECONDS=$left timeout $((left + 15)) bash ./run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "sanitize rc $? $(( $(date +%s) - START ))s"
  cat $W/sanitizer/summary.txt
fi
echo "elapsed $(( $(date +%s) - START ))"
