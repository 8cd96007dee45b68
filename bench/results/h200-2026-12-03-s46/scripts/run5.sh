#!/usr/bin/env bash
# Run 5 (session 46), one call: the grid on the final kernels (v7, run 4's sonic-bench) with
# FlashInfer's harness in the same call, for the standing figures.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run5.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in sonic-bench.xz peers/*.xz; do unxz $f; done
chmod +x sonic-bench run.sh peers/flashinfer_peers
md5sum sonic-bench peers/flashinfer_peers > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
timeout 120 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"; grep -E "verify_hetero" $W/grid/sonic-bench.md | head -8
timeout 60 bash ./run.sh flashinfer --out $W/grid/flashinfer-peers.json > $W/flashinfer.log 2>&1; echo "flashinfer rc $? $(el)s"; tail -1 $W/flashinfer.log
echo "elapsed $(el)"
