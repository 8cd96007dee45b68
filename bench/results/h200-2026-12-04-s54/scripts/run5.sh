#!/usr/bin/env bash
# Run 5 (session 54), one call: the final build, bc (PTX ef527a1e). Run 4's bb, with the clear
# of the band-sum slots moved out of `summarize` into stage 2's busy builds (the quiet builds
# never call `boundary_band`; with the clear in `summarize`, their two-per-SM build took
# untruncated rows at B = 256 1.02x the time). nvdisasm here shows every kernel's SASS equal to
# base's but `sample_rows` and `sample_rows_two_per_sm`, which equal bb's but for one compare
# written as its complement. bc's five GPU test binaries beside the four sanitizers; an A/B of
# base and bc (four rounds) on the cells the busy builds run; bc's grid and FlashInfer's harness.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run5.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in */*.xz */tests/*.xz */peers/*.xz; do unxz $f & done; wait
chmod +x */sonic-bench bc/tests/* bc/run.sh bc/peers/flashinfer_peers
cp bc/run.sh base/
md5sum */sonic-bench bc/tests/* bc/sampler_kernels.ptx bc/peers/flashinfer_peers > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
cd $C/bc
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_sampler tests/gpu_reliability tests/gpu_infra san/tests/
LEFT=$(( 330 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=8 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch|differ" $W/tests.log | head -20
wait; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:1,flat_topp095:f32:151936:64,flat_topp095:f32:151936:256,flat_topp095:bf16:128256:256,peaked_topp095:f32:128256:1,peaked_topp095:f32:128256:64,peaked_topp095:f32:128256:256,heterogeneous:f32:128256:8,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,alternating_topp095:f32:128256:64"
AB_SECONDS=60 timeout 120 bash ./run.sh ab $W/ab "$CELLS" 4 base=../base/sonic-bench bc=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
timeout 60 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"; grep -E "(flat_topp095|flat_full) \| f32 \| (128256|151936) \| (1|64|256) " $W/grid/sonic-bench.md | head -12
timeout 30 bash ./run.sh flashinfer --out $W/grid/flashinfer-peers.json > $W/flashinfer.log 2>&1; echo "flashinfer rc $? $(el)s"; tail -1 $W/flashinfer.log
echo "elapsed $(el)"
