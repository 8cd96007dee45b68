#!/usr/bin/env bash
# Run 5 (session 16): compute-sanitizer (all four tools, every GPU test binary), then a 40 s
# soak, on the final build (run 4's merged build).
W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run5.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in tests/*.gz *.gz; do gunzip -f $f; done; chmod +x tests/* sonic-bench sonic-soak run.sh
SANITIZE_SECONDS=300 timeout 330 ./run.sh sanitize $W/sanitizer > $W/sanitize-stdout.log 2>&1; echo "sanitize rc $?"; tail -25 $W/sanitizer/summary.txt
timeout 120 ./run.sh soak --seconds 40 --out $W/soak > $W/soak.log 2>&1; echo "soak rc $?"; tail -4 $W/soak.log
