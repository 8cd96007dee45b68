#!/usr/bin/env bash
# Run 5 (session 17): racecheck over gpu_topk alone on the final build (8a883b3), which run 3's
# 210 s sanitizer budget did not let finish.
W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run5.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
gunzip -f tests/*.gz; chmod +x tests/* run.sh
SANITIZE_TOOLS=racecheck SANITIZE_SECONDS=400 timeout 420 ./run.sh sanitize $W/sanitizer > $W/sanitize-stdout.log 2>&1; echo "sanitize rc $?"; cat $W/sanitizer/summary.txt
