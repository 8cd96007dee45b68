#!/usr/bin/env bash
# Run 1 (session 49), one call. v1: greedy steps on large bf16/f16 grids give each warp two
# tiles (abi::greedy_span), so a warp's fixed costs (first loads, settings, the arrival's fence
# and atomic) come once per two 8 KB tiles and the logits stream on across the boundary.
# v1f: v1's kernels with the host pairing f32 tiles too (a one-line host change, same PTX).
# An A/B of base (session 48's final build), v1 and v1f on 11 cells (four rounds); Nsight of
# greedy bf16 B = 1024 (v1); the five GPU test binaries on v1 beside the four sanitizers over
# gpu_sampler, gpu_reliability and gpu_infra; the grid and FlashInfer's harness on v1.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run1.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in v1/tests/*.xz v1/*.xz v1f/*.xz base/*.xz peers/*.xz; do unxz $f; done
chmod +x v1/tests/* */sonic-bench v1/run.sh peers/flashinfer_peers
md5sum */sonic-bench v1/tests/* v1/sampler_kernels.ptx peers/flashinfer_peers > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
cd $C/v1
CELLS="greedy:bf16:128256:64,greedy:bf16:128256:256,greedy:bf16:128256:1024,greedy:bf16:151936:256,greedy:bf16:151936:1024,greedy:bf16:262144:256,greedy:bf16:32000:1024,greedy:f32:128256:256,greedy:f32:128256:1024,greedy:f32:151936:1024,topk50_topp09_t07:f32:128256:256"
AB_SECONDS=60 timeout 240 bash ./run.sh ab $W/ab "$CELLS" 4 base=../base/sonic-bench v1=./sonic-bench v1f=../v1f/sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
timeout 60 bash ./run.sh profile greedy:bf16:128256:1024 $W/nsight > $W/nsight.log 2>&1; echo "nsight rc $? $(el)s"; grep -E "Duration|DRAM Through|Occupancy" $W/nsight.log | head; rm -f $W/nsight/*.ncu-rep
mkdir -p peers; cp ../peers/flashinfer_peers peers/
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_sampler tests/gpu_reliability tests/gpu_infra san/tests/
LEFT=$(( 520 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=8 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
SP=$!
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch|differ" $W/tests.log | head -20
wait $SP; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
timeout 70 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"; grep -E "greedy \| (bf16|f32) \| (128256|151936) \| (256|1024)" $W/grid/sonic-bench.md | head -10
timeout 50 bash ./run.sh flashinfer --out $W/grid/flashinfer-peers.json > $W/flashinfer.log 2>&1; echo "flashinfer rc $? $(el)s"; tail -1 $W/flashinfer.log
echo "elapsed $(el)"
