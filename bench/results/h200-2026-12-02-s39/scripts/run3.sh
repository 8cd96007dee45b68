#!/usr/bin/env bash
# Run 3 (session 39): FlashInfer's cake sampling (run 2 lacked cake_shim.py in the carry).
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run3.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
timeout 200 bash ./run.sh cake --out $W/cake-peers.json > $W/cake.log 2>&1; echo "cake rc $? $(el)s"; tail -2 $W/cake.log
echo "elapsed $(el)"
