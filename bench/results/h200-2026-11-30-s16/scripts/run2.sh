#!/usr/bin/env bash
# Run 2 (session 16): where run 1's conditional graph won (flat top-p 0.95, B = 256): the exact
# pass's launch order in the chain graph. Five variants of one build, two rounds.
W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run2.tar.gz -C $W .' EXIT
B=$PWD/.carry/b; cd $B
gunzip -f sonic-bench.gz; chmod +x sonic-bench run.sh
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,peaked_topp095:f32:128256:256,heterogeneous:f32:128256:8,heterogeneous:f32:151936:256,heterogeneous:f32:128256:1024,greedy:f32:128256:1,topk50_topp09_t07:f32:128256:64,random_full:f32:151936:256"
for i in 1 2; do
  for v in chain cond serialx firstx allserial; do
    case $v in
      chain) extra="--unconditional-exact-pass";;
      cond) extra="";;
      serialx) extra="--unconditional-exact-pass --exact-order serial";;
      firstx) extra="--unconditional-exact-pass --exact-order first-serial";;
      allserial) extra="--unconditional-exact-pass --serial-launches";;
    esac
    timeout 90 ./sonic-bench --only "$CELLS" $extra --out $W/ab/$v-$i > $W/ab-$v-$i.log 2>&1; echo "ab $v $i rc $?"
  done
done
