#!/usr/bin/env bash
# Run 2 (session 39), right after run 1 on the same machine: the PyTorch peers and FlashInfer's
# cake sampling (run 1 ran the grid and FlashInfer's harness).
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run2.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
timeout 300 bash ./run.sh peers --out $W/torch-peers.json > $W/peers.log 2>&1; echo "torch rc $? $(el)s"; tail -2 $W/peers.log
timeout 150 bash ./run.sh cake --out $W/cake-peers.json > $W/cake.log 2>&1; echo "cake rc $? $(el)s"; tail -2 $W/cake.log
echo "elapsed $(el)"
