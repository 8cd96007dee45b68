#!/usr/bin/env bash
# Run 2 (session 41), one call. Builds: base = session 40's final kernels (9a0a9e3, the
# bundle run 1 profiled); l1 = base with sample_tiles_ring, beside the mass scan, scanning the
# host's list of rows that need no mass, split as far as its grid allows (listed_scan_split).
# A/B of the two on the mixed (heterogeneous) cells and controls, four rounds; the grid on l1
# with FlashInfer's harness after it in the same call; Nsight durations of heterogeneous B = 64
# on l1; then the five GPU test binaries beside compute-sanitizer (racecheck, memcheck,
# initcheck, synccheck) over all five.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run2.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz ../base/*.xz peers/*.xz; do unxz $f; done; chmod +x tests/* sonic-bench run.sh ../base/sonic-bench peers/flashinfer_peers
md5sum sonic-bench ../base/sonic-bench tests/* peers/flashinfer_peers > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
CELLS="heterogeneous:f32:128256:8,heterogeneous:f32:128256:64,heterogeneous:f32:151936:64,heterogeneous:f32:32000:64,heterogeneous:bf16:128256:64,heterogeneous:bf16:151936:64,heterogeneous:f32:262144:64,heterogeneous:f32:128256:256,topk50_topp09_t07:f32:128256:64,random_full:f32:128256:64,heterogeneous:f32:128256:1"
AB_SECONDS=40 timeout 170 bash ./run.sh ab $W/ab "$CELLS" 4 base=../base/sonic-bench l1=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
timeout 60 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"; grep -A10 "Exact pass against" $W/grid/sonic-bench.md | tail -7
timeout 80 bash ./run.sh flashinfer --out $W/grid/flashinfer-peers.json > $W/flashinfer.log 2>&1; echo "flashinfer rc $? $(el)s"; tail -2 $W/flashinfer.log
timeout 60 bash ./run.sh profile heterogeneous:f32:128256:64 $W/nsight > $W/nsight.log 2>&1; echo "profile rc $? $(el)s"; grep -E "^  [a-z]|Duration" $W/nsight/heterogeneous-f32-128256-64-summary.txt; rm -f $W/nsight/*.ncu-rep; rm -rf $W/nsight/bench-*
mkdir -p san/tests; cp run.sh san/; cp tests/* san/tests/
LEFT=$(( 570 - $(el) - 15 )); echo "sanitizer budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=8 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
SP=$!
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch" $W/tests.log | head -20
wait $SP; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
echo "elapsed $(el)"
