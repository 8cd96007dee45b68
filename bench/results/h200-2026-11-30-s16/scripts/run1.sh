#!/usr/bin/env bash
# Run 1 (session 16): the exact pass behind a conditional graph node. Every GPU test; an A/B of
# base (087efa6), new (conditional) and new --unconditional-exact-pass, two rounds.
W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run1.tar.gz -C $W .' EXIT
B=$PWD/.carry/b; cd $B
for f in tests/*.gz *.gz; do gunzip -f $f; done; chmod +x tests/* sonic-bench base-bench sonic-soak run.sh
nvidia-smi --query-gpu=name,driver_version --format=csv > $W/gpu.txt
timeout 240 ./run.sh > $W/tests.log 2>&1; echo "tests rc $?"; tail -1 $W/tests.log; grep -E "FAILED|panicked|mismatch|error" $W/tests.log | head -8
CELLS="greedy:f32:128256:1,topk50_topp09_t07:f32:128256:1,heterogeneous:f32:128256:1,random_full:f32:128256:1,greedy:bf16:32000:1,flat_topp095:f32:128256:1,greedy:f32:128256:64,topk50_topp09_t07:f32:128256:64,heterogeneous:f32:128256:8,heterogeneous:f32:151936:256,flat_topp095:f32:128256:256,greedy:f32:151936:1024"
for i in 1 2; do
  for v in base new uncond; do
    bin=./sonic-bench; extra=""; [ $v = base ] && bin=./base-bench; [ $v = uncond ] && extra="--unconditional-exact-pass"
    timeout 90 $bin --only "$CELLS" $extra --out $W/ab/$v-$i > $W/ab-$v-$i.log 2>&1; echo "ab $v $i rc $?"
  done
done
