#!/usr/bin/env bash
# Run 4 (session 20): compute-sanitizer (memcheck, racecheck, initcheck, synccheck over all five
# GPU test binaries, reduced sizes) and a 30 s soak on run 3's vm build (d24d01d).
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run4.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in tests/*.gz *.gz; do gunzip -f $f; done; chmod +x tests/* *-bench sonic-soak run.sh; cp vm-bench sonic-bench
(SANITIZE_SECONDS=240 timeout 255 ./run.sh sanitize $W/sanitizer > $W/sanitize-stdout.log 2>&1); echo "sanitize rc $?"; tail -4 $W/sanitizer/summary.txt
(timeout 50 ./run.sh soak --seconds 30 --out $W/soak > $W/soak.log 2>&1); echo "soak rc $?"; tail -2 $W/soak.log
echo "elapsed $(( $(date +%s) - START ))"
