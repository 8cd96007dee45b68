#!/usr/bin/env bash
# Run 4 (session 16): exact_finish also runs the single-block pass (sample_exact gone: seven
# launches). Every GPU test on it; an A/B of base (087efa6), firstx (fb6e7ca) and merged (this
# build), two rounds; then the grid on the build decide.py picks (firstx's tests first if the
# pick is firstx).
W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run4.tar.gz -C $W .' EXIT
C=$PWD/.carry
for d in b bf; do (cd $C/$d && for f in tests/*.gz *.gz; do gunzip -f $f; done; chmod +x tests/* sonic-bench sonic-soak run.sh); done
chmod +x $C/b/base-bench
nvidia-smi --query-gpu=name,driver_version --format=csv > $W/gpu.txt
(cd $C/b && timeout 220 ./run.sh > $W/tests-merged.log 2>&1); rc=$?; echo "merged tests rc $rc"; tail -1 $W/tests-merged.log; grep -E "FAILED|panicked|mismatch" $W/tests-merged.log | head -6
CELLS="greedy:f32:128256:1,greedy:bf16:32000:1,topk50_topp09_t07:f32:128256:1,heterogeneous:f32:128256:1,random_full:f32:128256:1,flat_topp095:f32:128256:1,heterogeneous:f32:128256:8,topk50_topp09_t07:f32:128256:64,flat_topp095:f32:128256:64,greedy:f32:128256:256,heterogeneous:f32:151936:256,flat_topp095:f32:128256:256,heterogeneous:f32:128256:1024"
for i in 1 2; do
  for v in base firstx merged; do
    case $v in base) bin=$C/b/base-bench;; firstx) bin=$C/bf/sonic-bench;; merged) bin=$C/b/sonic-bench;; esac
    timeout 90 $bin --only "$CELLS" --out $W/ab/$v-$i > $W/ab-$v-$i.log 2>&1; echo "ab $v $i rc $?"
  done
done
python3 $C/decide.py $W/ab $rc | tee $W/decide.txt
pick=$(cat $W/pick.txt)
if [ "$pick" = bf ]; then
  (cd $C/bf && timeout 200 ./run.sh > $W/tests-firstx.log 2>&1); echo "firstx tests rc $?"; tail -1 $W/tests-firstx.log
fi
(cd $C/$pick && timeout 170 ./run.sh bench --out $W/grid --date 2026-11-30 > $W/bench-stdout.log 2>&1); echo "bench rc $?"; tail -2 $W/bench-stdout.log
