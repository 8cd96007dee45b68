#!/usr/bin/env bash
# Run 5 (session 20): the gpu_verify binary with the new test of chains that repeat one token
# (verify_chains' counts with multiplicity), on vm's kernels (the same PTX).
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run5.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
gunzip -f gpu_verify.gz; chmod +x gpu_verify
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
timeout 150 ./gpu_verify --test-threads=1 > $W/gpu_verify.log 2>&1; echo "gpu_verify rc $? $(( $(date +%s) - START ))s"; grep -E "^test |test result|panicked|differ" $W/gpu_verify.log | head -20
echo "elapsed $(( $(date +%s) - START ))"
