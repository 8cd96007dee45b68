#!/usr/bin/env bash
# Run 6 (session 20): the soak with verification calls (every 10th replay), 60 s, on vm's
# kernels (the same PTX).
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run6.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
gunzip -f sonic-soak.gz; chmod +x sonic-soak run.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
(timeout 120 ./run.sh soak --seconds 60 --out $W/soak > $W/soak.log 2>&1); echo "soak rc $? $(( $(date +%s) - START ))s"; tail -30 $W/soak.log
echo "elapsed $(( $(date +%s) - START ))"
