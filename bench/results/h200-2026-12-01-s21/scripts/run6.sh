#!/usr/bin/env bash
# Run 6 (session 21): the whole grid on v4 (7eeb7a7), with the new flat_full cells.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run6.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
gunzip -f v4-bench.gz; chmod +x v4-bench run.sh; cp v4-bench sonic-bench
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
timeout 470 bash ./run.sh bench --out $W/grid > $W/bench-stdout.log 2>&1; echo "bench rc $? $(( $(date +%s) - START ))s"; tail -1 $W/bench-stdout.log
sed -n '/## Exact pass against/,$p' $W/grid/sonic-bench.md | head -14
echo "elapsed $(( $(date +%s) - START ))"
