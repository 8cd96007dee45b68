#!/usr/bin/env bash
# Run 4 (session 24): the final build (cf52b3f = run 1's v2; the bench binary is the same, md5)
# under every GPU test; its grid; compute-sanitizer's four tools over the five test binaries
# with the time left.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run4.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in tests/*.gz *.gz; do gunzip -f $f; done; chmod +x tests/* *-bench sonic-soak run.sh; cp v2-bench sonic-bench
md5sum sonic-bench tests/* > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
timeout 220 bash ./run.sh > $W/tests.log 2>&1; trc=$?; echo "tests rc $trc $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "FAILED|panicked|mismatch|differ" $W/tests.log | head -20
timeout 120 bash ./run.sh bench --out $W/grid > $W/bench-stdout.log 2>&1; echo "bench rc $? $(( $(date +%s) - START ))s"; tail -1 $W/bench-stdout.log
sed -n '/## Exact pass against/,/^## Spec/p' $W/grid/sonic-bench.md | head -14
left=$(( 560 - ($(date +%s) - START) )); echo "sanitizer budget $left s"
if [ $trc -eq 0 ] && [ $left -gt 60 ]; then
  SANITIZE_SECONDS=$left timeout $((left + 15)) bash ./run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "sanitize rc $? $(( $(date +%s) - START ))s"
  cat $W/sanitizer/summary.txt
fi
echo "elapsed $(( $(date +%s) - START ))"
