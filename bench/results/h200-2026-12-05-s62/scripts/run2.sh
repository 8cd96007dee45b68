#!/usr/bin/env bash
# Session 62, call 2 (the device's last starts were refused, so one call holds what two were to).
# Builds (PTX 3708d7b3, the landed kernels, in all):
# - s62: run 1's (main at a54af317; ByRows by the batch: the exact pass's first launch
#   overlapped from 64 to 132 rows);
# - lr: main at 0df69012 (ByRows keyed on the rows stage 2 may list: at least 48, on grids of at
#   most one row a SM), its sonic-bench replaced by 8ca8f019's, which also times output reads;
# - rb: main at 8ca8f019 (lr, and read_outputs / read_verify_outputs queue every copy into
#   pinned memory and wait once, instead of a synchronous copy per array), with the FlashInfer
#   peer harness built in session 62;
# carried as .carry/{s62,lr,rb}/.
# 1. A/B, alone on the GPU, three rounds: s62, lr, rb, and s62 with the first launch always
#    overlapped; lr against rb for the reads;
# 2. rb's six test binaries;
# 3. rb's grid and FlashInfer's peers, alone on the GPU;
# 4. Nsight durations of flat top-p 0.95 and its fast path at V = 151936, B = 256 (the exact
#    pass's cell over 2x its fast path), as time allows.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run2.tar.gz -C $W .' EXIT
. "$PWD/bench/candidates/carry-unpack.sh"
chmod +x rb/peers/flashinfer_peers
md5sum */sonic-bench */tests/* rb/peers/flashinfer_peers > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $W/gpu.txt
cd $C/s62
CELLS=""
for b in 40 44 48 56 64; do CELLS="$CELLS${CELLS:+,}flat_topp095:f32:128256:$b"; done
for b in 40 48 64; do CELLS="$CELLS,peaked_topp095:f32:128256:$b"; done
for b in 1 8 48 64 96 128 256; do CELLS="$CELLS,heterogeneous:f32:128256:$b"; done
CELLS="$CELLS,heterogeneous:f32:151936:64,flat_topp095:f32:151936:64,flat_topp095:f32:128256:8,flat_topp095:f32:151936:256,topk50_topp09_t07:f32:128256:64,greedy:f32:128256:1,greedy:f32:128256:64"
AB_SECONDS=60 timeout 170 ./run.sh ab $W/ab "$CELLS" 3 'base=./sonic-bench' "lr=$C/lr/sonic-bench" "rb=$C/rb/sonic-bench" 'ovl=./sonic-bench --exact-order overlapped' > $W/ab.log 2>&1
echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
cd $C/rb
( for t in gpu_sampler gpu_topk gpu_infra; do REQUIRE_GPU=1 timeout 150 ./tests/$t --test-threads=2 > $W/test-$t.log 2>&1; echo "$t rc $? $(el)s" >> $W/test-$t.log; done ) &
( for t in gpu_verify gpu_validation gpu_reliability; do REQUIRE_GPU=1 timeout 150 ./tests/$t --test-threads=2 > $W/test-$t.log 2>&1; echo "$t rc $? $(el)s" >> $W/test-$t.log; done ) &
wait
for f in $W/test-*.log; do grep -E "test result|FAILED|panicked" $f; tail -1 $f; done
LEFT=$(( 540 - $(el) )); echo "grid budget $LEFT s"
timeout $(( LEFT > 40 ? LEFT - 30 : 10 )) bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"
LEFT=$(( 560 - $(el) ))
[ $LEFT -gt 30 ] && { timeout $(( LEFT - 10 )) bash ./run.sh flashinfer --out $W/grid/flashinfer-peers.json > $W/flashinfer.log 2>&1; echo "flashinfer rc $? $(el)s"; tail -2 $W/flashinfer.log; }
grep -A12 "Exact pass against" $W/grid/sonic-bench.md | tail -8
for cell in flat_topp095:f32:151936:256 flat_full:f32:151936:256; do
  LEFT=$(( 570 - $(el) )); [ $LEFT -gt 25 ] || break
  timeout $LEFT bash ./run.sh profile $cell $W/profile > $W/profile-$cell.log 2>&1; echo "profile $cell rc $? $(el)s"
done
rm -f $W/profile/*.ncu-rep; for f in $W/profile/*-summary.txt; do [ -e "$f" ] && { echo "== $f"; grep -E "^  [a-z_]+ \(|Duration" $f | paste - - | awk '{print $1, $(NF)}'; }; done
echo "elapsed $(el)"
