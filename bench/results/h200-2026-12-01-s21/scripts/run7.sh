#!/usr/bin/env bash
# Run 7 (session 21): the soak (steps, and a verification call every tenth replay), 60 s, on
# v4 (7eeb7a7, the final kernels); Nsight summary of a flat top-p B = 256 step on v4.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run7.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
gunzip -f *.gz; chmod +x sonic-soak sonic-bench run.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
(timeout 120 ./run.sh soak --seconds 60 --out $W/soak > $W/soak.log 2>&1); echo "soak rc $? $(( $(date +%s) - START ))s"; tail -14 $W/soak.log
timeout 60 bash ./run.sh profile flat_topp095:f32:128256:256 $W/profile > $W/profile.log 2>&1; echo "profile rc $?"
grep -E "^  [a-z_]+ \(|Duration" $W/profile/*-summary.txt | paste - - | awk '{print $1, $(NF-1), $NF}'; rm -f $W/profile/*.ncu-rep
echo "elapsed $(( $(date +%s) - START ))"
