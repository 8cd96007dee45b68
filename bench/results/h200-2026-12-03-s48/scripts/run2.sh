#!/usr/bin/env bash
# Run 2 (session 48), one call. v3: v2 with the half-width top-k/greedy-row loops in a kernel of
# their own (sample_tiles_half, launched for bf16 and f16 logits), so that sample_tiles' f32
# code is session 47's (v2 had f32 top-k 50 at 1.015x). An A/B of base, v2 and v3 on 15 cells
# (four rounds); Nsight of greedy bf16 B = 1024 (v3); the five GPU test binaries on v3 beside
# the four sanitizers over gpu_sampler, gpu_reliability and gpu_infra; the grid and
# FlashInfer's harness on v3.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run2.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in v3/tests/*.xz v3/*.xz v2/*.xz base/*.xz peers/*.xz; do unxz $f; done
chmod +x v3/tests/* */sonic-bench v3/run.sh peers/flashinfer_peers
md5sum */sonic-bench v3/tests/* peers/flashinfer_peers > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
cd $C/v3
CELLS="greedy:bf16:128256:8,greedy:bf16:128256:64,greedy:bf16:128256:256,greedy:bf16:128256:1024,greedy:f32:128256:256,greedy:f32:128256:1024,topk50_topp09_t07:bf16:128256:64,topk50_topp09_t07:bf16:128256:256,topk50_topp09_t07:bf16:128256:1024,topk50_topp09_t07:f32:128256:256,topk50_topp09_t07:f32:128256:1024,heterogeneous:bf16:128256:256,heterogeneous:f32:128256:256,crowded_topk50:f32:128256:256,crowded_topk50:bf16:128256:256"
AB_SECONDS=60 timeout 240 bash ./run.sh ab $W/ab "$CELLS" 4 base=../base/sonic-bench v2=../v2/sonic-bench v3=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
timeout 60 bash ./run.sh profile greedy:bf16:128256:1024 $W/nsight > $W/nsight.log 2>&1; echo "nsight rc $? $(el)s"; cat $W/nsight.log | head -20
mkdir -p peers; cp ../peers/flashinfer_peers peers/
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_sampler tests/gpu_reliability tests/gpu_infra san/tests/
LEFT=$(( 500 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=8 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
SP=$!
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch|differ" $W/tests.log | head -20
wait $SP; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
timeout 70 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"; grep -E "(greedy|topk50_topp09_t07) \| (bf16|f32) \| 128256 \| (256|1024)" $W/grid/sonic-bench.md | head -10
timeout 50 bash ./run.sh flashinfer --out $W/grid/flashinfer-peers.json > $W/flashinfer.log 2>&1; echo "flashinfer rc $? $(el)s"; tail -1 $W/flashinfer.log
echo "elapsed $(el)"
