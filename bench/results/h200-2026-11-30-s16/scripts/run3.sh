#!/usr/bin/env bash
# Run 3 (session 16): sample_exact on a side stream beside the split exact pass. Every GPU test
# on that build; an A/B of base (087efa6), firstx (fb6e7ca: the exact pass's first launch
# serial) and fork (this build: firstx + the side stream), two rounds.
W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run3.tar.gz -C $W .' EXIT
B=$PWD/.carry/b; cd $B
for f in tests/*.gz *.gz; do gunzip -f $f; done; chmod +x tests/* sonic-bench firstx-bench base-bench run.sh
nvidia-smi --query-gpu=name,driver_version --format=csv > $W/gpu.txt
timeout 240 ./run.sh > $W/tests.log 2>&1; echo "tests rc $?"; tail -1 $W/tests.log; grep -E "FAILED|panicked|mismatch|error" $W/tests.log | head -8
CELLS="greedy:f32:128256:1,greedy:bf16:32000:1,topk50_topp09_t07:f32:128256:1,heterogeneous:f32:128256:1,random_full:f32:128256:1,flat_topp095:f32:128256:1,heterogeneous:f32:128256:8,topk50_topp09_t07:f32:128256:64,flat_topp095:f32:128256:64,greedy:f32:128256:256,heterogeneous:f32:151936:256,flat_topp095:f32:128256:256"
for i in 1 2; do
  for v in base firstx fork; do
    bin=./sonic-bench; [ $v = base ] && bin=./base-bench; [ $v = firstx ] && bin=./firstx-bench
    timeout 90 $bin --only "$CELLS" --out $W/ab/$v-$i > $W/ab-$v-$i.log 2>&1; echo "ab $v $i rc $?"
  done
done
