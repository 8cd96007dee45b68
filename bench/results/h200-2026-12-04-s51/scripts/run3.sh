#!/usr/bin/env bash
# Run 3 (session 51), one call. fin: c4ece30, exact_bins and the finish two per SM only when
# the rows stage 2 may list outnumber the SMs (base's PTX). A/B of base (session 50's final
# build, edb1f86) and fin; fin's five GPU test binaries beside the four sanitizers over
# gpu_sampler, gpu_reliability and gpu_infra (reduced sizes); the grid and FlashInfer on fin.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run3.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in base/*.xz fin/*.xz fin/tests/*.xz fin/peers/*.xz; do unxz $f & done; wait
chmod +x */sonic-bench fin/tests/* fin/run.sh fin/peers/flashinfer_peers
md5sum */sonic-bench fin/tests/* fin/peers/flashinfer_peers > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
cd $C/fin
CELLS="heterogeneous:f32:128256:8,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,heterogeneous:f32:128256:1024,heterogeneous:bf16:128256:256,heterogeneous:f32:151936:256,heterogeneous:bf16:151936:256,heterogeneous:f32:262144:256,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256"
AB_SECONDS=60 timeout 200 bash ./run.sh ab $W/ab "$CELLS" 4 base=../base/sonic-bench fin=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_sampler tests/gpu_reliability tests/gpu_infra san/tests/
LEFT=$(( 480 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=8 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch|differ" $W/tests.log | head -20
wait; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
timeout 60 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"; grep -E "heterogeneous \| (f32|bf16) \| (128256|151936) \| (64|256|1024)" $W/grid/sonic-bench.md | head -12
timeout 30 bash ./run.sh flashinfer --out $W/grid/flashinfer-peers.json > $W/flashinfer.log 2>&1; echo "flashinfer rc $? $(el)s"; tail -1 $W/flashinfer.log
echo "elapsed $(el)"
