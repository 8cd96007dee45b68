#!/usr/bin/env bash
# Run 7 (session 16): run 6's build with its new test's expectation fixed (a replay of kind 0
# may draw greedy rows alone): gpu_sampler alone, then under all four compute-sanitizer tools
# (the other binaries passed all four in run 6), then the grid if time is left.
W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run7.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b2
for f in tests/*.gz *.gz; do gunzip -f $f; done; chmod +x tests/* sonic-bench run.sh
timeout 60 ./run.sh > $W/tests-gpu_sampler.log 2>&1; echo "tests rc $?"; tail -1 $W/tests-gpu_sampler.log
SANITIZE_SECONDS=165 timeout 180 ./run.sh sanitize $W/sanitizer > $W/sanitize-stdout.log 2>&1; echo "sanitize rc $?"; cat $W/sanitizer/summary.txt
timeout 100 ./run.sh bench --out $W/grid --date 2026-11-30 > $W/bench-stdout.log 2>&1; echo "bench rc $?"; tail -1 $W/bench-stdout.log
