#!/usr/bin/env bash
# Run 3 (session 26): every GPU test on the mass-only build (3f20eb5: steps whose rows all need
# the row mass launch no sample_tiles); A/B of base (session 25's final k3, bada4f9), quiet
# (267f909, run 2's) and mass (3f20eb5); the grid of the mass build; racecheck, initcheck and
# synccheck over the five test binaries with the time left.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run3.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in tests/*.gz *.gz; do gunzip -f $f; done; chmod +x tests/* *-bench sonic-soak run.sh; cp mass-bench sonic-bench
md5sum *-bench sonic-bench tests/* > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
timeout 230 bash ./run.sh > $W/tests.log 2>&1; trc=$?; echo "tests rc $trc $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "FAILED|panicked|mismatch|differ" $W/tests.log | head -20
CELLS="random_full:f32:128256:1,random_full:f32:128256:64,flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,peaked_topp095:f32:128256:1,peaked_topp095:f32:128256:64,flat_full:f32:151936:64,topk50_topp09_t07:f32:128256:1,heterogeneous:f32:128256:8"
AB_SECONDS=60 timeout 170 bash ./run.sh ab $W/ab "$CELLS" 2 base=./k3-bench quiet=./quiet-bench mass=./mass-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
timeout 90 bash ./run.sh bench --out $W/grid > $W/bench-stdout.log 2>&1; echo "bench rc $? $(( $(date +%s) - START ))s"; tail -1 $W/bench-stdout.log
left=$(( 575 - ($(date +%s) - START) )); echo "sanitizer budget $left s"
if [ $trc -eq 0 ] && [ $left -gt 60 ]; then
  SANITIZE_TOOLS="racecheck initcheck synccheck" SANITIZE_SECONDS=$left timeout $((left + 15)) bash ./run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "sanitize rc $? $(( $(date +%s) - START ))s"
  cat $W/sanitizer/summary.txt
fi
echo "elapsed $(( $(date +%s) - START ))"
