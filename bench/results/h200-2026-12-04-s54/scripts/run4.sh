#!/usr/bin/env bash
# Run 4 (session 54), one call. base: session 53's landed build (PTX 95ca6c44). bs: run 3's
# build (the band sums added up once in `summarize`, the row mass from them, `boundary_band`
# with no barrier; PTX a035e2b5). bb: `summarize` as base (but it clears the band-sum slots),
# and `boundary_band` adds the sums up itself, then one barrier and a scan in every warp
# (PTX b7df433c): run 3 put untruncated rows at 1.000-1.011x with bs, whose `summarize` changed.
# A/B of the three (four rounds) on run 3's cells; Nsight summaries of flat top-p 0.95 at
# B = 64 on bb; bb's five GPU test binaries beside the four sanitizers; bb's grid and
# FlashInfer's harness.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run4.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in */*.xz */tests/*.xz */peers/*.xz; do unxz $f & done; wait
chmod +x */sonic-bench bb/tests/* bb/run.sh bb/peers/flashinfer_peers
cp bb/run.sh base/; cp bb/run.sh bs/
md5sum */sonic-bench bb/tests/* bb/sampler_kernels.ptx bb/peers/flashinfer_peers > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
cd $C/bb
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:1,flat_topp095:f32:151936:64,flat_topp095:f32:151936:256,flat_full:f32:128256:1,flat_full:f32:128256:64,flat_full:f32:128256:256,flat_full:f32:151936:1,flat_full:f32:151936:64,flat_full:f32:151936:256,flat_topp095:bf16:128256:256,peaked_topp095:f32:128256:1,peaked_topp095:f32:128256:64,peaked_topp095:f32:128256:256,heterogeneous:f32:128256:8,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,random_full:f32:128256:1,random_full:f32:128256:1024,alternating_topp095:f32:128256:64,topk50_topp09_t07:f32:128256:1,topk50_topp09_t07:f32:128256:256"
AB_SECONDS=60 timeout 300 bash ./run.sh ab $W/ab "$CELLS" 4 base=../base/sonic-bench bs=../bs/sonic-bench bb=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
timeout 40 bash ./run.sh profile flat_topp095:f32:128256:64 $W/nsight-bb > /dev/null 2>&1; echo "nsight bb rc $? $(el)s"
rm -f $W/nsight-*/*.ncu-rep
for f in $W/nsight-*/*-summary.txt; do echo "== $f"; grep -E "^  [a-z_]+ \(|Duration" $f | paste - - | awk '{print $1, $(NF)}'; done
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_sampler tests/gpu_reliability tests/gpu_infra san/tests/
LEFT=$(( 480 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=8 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch|differ" $W/tests.log | head -20
wait; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
timeout 60 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"; grep -E "(flat_topp095|flat_full) \| f32 \| (128256|151936) \| (1|64|256) " $W/grid/sonic-bench.md | head -12
timeout 30 bash ./run.sh flashinfer --out $W/grid/flashinfer-peers.json > $W/flashinfer.log 2>&1; echo "flashinfer rc $? $(el)s"; tail -1 $W/flashinfer.log
echo "elapsed $(el)"
