#!/usr/bin/env bash
# Run 4 (session 17): the final build, 8a883b3 (the host lists sample_tiles_mass' rows, on
# e31b7cd's fused weights): every GPU test, the whole benchmark grid, and Nsight summaries of
# heterogeneous V = 151936 at B = 64 and 256.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run4.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in tests/*.gz *.gz; do gunzip -f $f; done; chmod +x tests/* sonic-bench run.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
timeout 260 ./run.sh > $W/tests.log 2>&1; echo "tests rc $?"; tail -1 $W/tests.log; grep -E "FAILED|panicked|mismatch" $W/tests.log | head -6
timeout 240 ./run.sh bench --out $W/grid > $W/bench-stdout.log 2>&1; echo "bench rc $?"; tail -3 $W/bench-stdout.log
for c in heterogeneous:f32:151936:256 heterogeneous:f32:151936:64; do
  timeout 80 ./run.sh profile $c $W/prof > /dev/null 2>&1; echo "prof $c rc $?"
done
rm -f $W/prof/*.ncu-rep
echo "elapsed $(( $(date +%s) - START ))"
