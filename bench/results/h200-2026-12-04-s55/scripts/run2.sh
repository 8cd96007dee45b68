#!/usr/bin/env bash
# Run 2 (session 55), one call. wf: session 54's final build (PTX 67ba1a64), the landed one.
# g2, g8, g16: wf with verification's groups that take rows in turn (`verify::group_shape`,
# calls of more target rows than half the grid from at most half as many requests as blocks,
# half of them random) sized for 2, 8 or 16 blocks (wf: grid / requests, 4 at B = 32, none at
# B = 128): `grid / max(requests, grid / 2)`, `grid / min(requests, grid / 8)`,
# `grid / min(requests, grid / 16)` blocks a group (verify_rows' SASS the same size and
# spills as wf's). A/B of the four on verification cells of B = 32 and 128 (four rounds);
# Nsight summaries of wf at verify_hetero B = 1; wf's grid and FlashInfer's harness.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run2.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in */*.xz */peers/*.xz; do unxz $f & done; wait
chmod +x */sonic-bench wf/run.sh wf/peers/flashinfer_peers
md5sum */sonic-bench wf/sampler_kernels.ptx wf/peers/flashinfer_peers > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
cd $C/wf
CELLS="verify_uniform:f32:128256:32,verify_uniform:f32:151936:32,verify_hetero:f32:128256:32,verify_hetero:f32:151936:32,verify_sampled:f32:128256:32,verify_sampled:f32:151936:32,verify_uniform:f32:128256:128,verify_uniform:f32:151936:128,verify_hetero:f32:128256:128,verify_hetero:f32:151936:128,verify_sampled:f32:128256:128,verify_sampled:f32:151936:128,verify_accept70:f32:128256:32"
AB_SECONDS=80 timeout 200 bash ./run.sh ab $W/ab "$CELLS" 4 wf=./sonic-bench g2=../g2/sonic-bench g8=../g8/sonic-bench g16=../g16/sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
for cell in verify_hetero:f32:128256:1 verify_hetero:f32:151936:1; do timeout 40 bash ./run.sh profile $cell $W/nsight > $W/nsight-$(echo $cell | tr ':' '-').log 2>&1; echo "profile $cell rc $? $(el)s"; done
rm -f $W/nsight/*.ncu-rep
timeout 70 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"; grep -E "(flat_topp095|flat_full) \| f32 \| (128256|151936) \| (1|64|256) " $W/grid/sonic-bench.md | head -12
timeout 30 bash ./run.sh flashinfer --out $W/grid/flashinfer-peers.json > $W/flashinfer.log 2>&1; echo "flashinfer rc $? $(el)s"; tail -1 $W/flashinfer.log
echo "elapsed $(el)"
