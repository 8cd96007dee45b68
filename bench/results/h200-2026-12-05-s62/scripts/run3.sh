#!/usr/bin/env bash
# Session 62, call 3. rb2: main at 6ef0cddd, its sonic-bench from the next commit (the table header
# states the new rule) (PTX 3708d7b3): rb with PinnedReadback's own event
# (run 2's rb read its pinned buffers before the copies had run: cudarc records the buffer's
# event only in a context that tracks events, and the sampler's does not), and ByRows from 40
# listable rows (48 before). lr: run 2's (0df69012 with 8ca8f019's sonic-bench).
# 1. A/B, alone on the GPU, three rounds: lr against rb2, steps and output reads;
# 2. rb2's six test binaries beside a 90 s soak;
# 3. rb2's grid and FlashInfer's peers, alone on the GPU.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run3.tar.gz -C $W .' EXIT
. "$PWD/bench/candidates/carry-unpack.sh"
chmod +x rb2/peers/flashinfer_peers rb2/sonic-soak
md5sum */sonic-bench rb2/sonic-soak rb2/tests/* rb2/peers/flashinfer_peers > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $W/gpu.txt
cd $C/rb2
CELLS="heterogeneous:f32:128256:1,heterogeneous:f32:128256:8,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,greedy:f32:128256:1,greedy:f32:128256:64,topk50_topp09_t07:f32:128256:64,flat_topp095:f32:128256:40,peaked_topp095:f32:128256:40,flat_topp095:f32:128256:44,flat_topp095:f32:128256:64"
AB_SECONDS=60 timeout 120 ./run.sh ab $W/ab "$CELLS" 3 "lr=$C/lr/sonic-bench" 'rb2=./sonic-bench' > $W/ab.log 2>&1
echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
(timeout 110 ./sonic-soak --seconds 90 --out $W/soak > $W/soak.log 2>&1; echo "soak rc $? $(el)s" >> $W/soak.log) &
( for t in gpu_sampler gpu_topk gpu_infra; do REQUIRE_GPU=1 timeout 150 ./tests/$t --test-threads=2 > $W/test-$t.log 2>&1; echo "$t rc $? $(el)s" >> $W/test-$t.log; done ) &
( for t in gpu_verify gpu_validation gpu_reliability; do REQUIRE_GPU=1 timeout 150 ./tests/$t --test-threads=2 > $W/test-$t.log 2>&1; echo "$t rc $? $(el)s" >> $W/test-$t.log; done ) &
wait
for f in $W/test-*.log; do grep -E "test result|FAILED|panicked" $f | head -8; tail -1 $f; done
tail -28 $W/soak.log
LEFT=$(( 330 - $(el) )); echo "grid budget $LEFT s"
[ $LEFT -gt 60 ] && { timeout $(( LEFT - 30 )) bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"; }
LEFT=$(( 370 - $(el) ))
[ $LEFT -gt 30 ] && { timeout $(( LEFT - 10 )) bash ./run.sh flashinfer --out $W/grid/flashinfer-peers.json > $W/flashinfer.log 2>&1; echo "flashinfer rc $? $(el)s"; tail -1 $W/flashinfer.log; }
grep -A12 "Exact pass against" $W/grid/sonic-bench.md | tail -8
echo "elapsed $(el)"
