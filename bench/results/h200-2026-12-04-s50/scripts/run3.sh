#!/usr/bin/env bash
# Run 3 (session 50), one call: the landed binaries (final: ov6's rule as
# abi::OVERLAP_STAGE1_WAVES = 6, PTX md5 1c70357a). A short A/B against base; the grid and
# FlashInfer's harness; the five GPU test binaries.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run3.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in final/tests/*.xz final/*.xz base/*.xz peers/*.xz; do unxz $f & done; wait
chmod +x final/tests/* */sonic-bench final/run.sh peers/flashinfer_peers
md5sum */sonic-bench final/tests/* peers/flashinfer_peers > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
cd $C/final
mkdir -p peers; cp ../peers/flashinfer_peers peers/
CELLS="heterogeneous:f32:151936:256,heterogeneous:f32:32000:1024,heterogeneous:bf16:128256:256,heterogeneous:f32:128256:1024"
AB_SECONDS=60 timeout 100 bash ./run.sh ab $W/ab "$CELLS" 3 base=../base/sonic-bench final=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
timeout 70 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"; grep -E "heterogeneous \| (f32|bf16) \| (128256|151936) \| (64|256|1024)" $W/grid/sonic-bench.md | head -12
timeout 40 bash ./run.sh flashinfer --out $W/grid/flashinfer-peers.json > $W/flashinfer.log 2>&1; echo "flashinfer rc $? $(el)s"; tail -1 $W/flashinfer.log
LEFT=$(( 560 - $(el) )); echo "test budget $LEFT s"
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch|differ" $W/tests.log | head -20
echo "elapsed $(el)"
