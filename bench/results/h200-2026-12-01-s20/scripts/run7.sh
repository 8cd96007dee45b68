#!/usr/bin/env bash
# Run 7 (session 20): compute-sanitizer (memcheck, racecheck, initcheck, synccheck; reduced
# sizes) over gpu_verify alone, which now holds the repeated-token test, on vm's kernels.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run7.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
gunzip -f tests/gpu_verify.gz; chmod +x tests/gpu_verify run.sh
(SANITIZE_SECONDS=200 timeout 215 ./run.sh sanitize $W/sanitizer > $W/sanitize-stdout.log 2>&1); echo "sanitize rc $? $(( $(date +%s) - START ))s"; cat $W/sanitizer/summary.txt
echo "elapsed $(( $(date +%s) - START ))"
