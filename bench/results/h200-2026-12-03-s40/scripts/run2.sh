#!/usr/bin/env bash
# Run 2 (session 40), one call. Builds: base = session 39's final kernels (065fe59, the md5
# sums of run 1 match session 39's run 4); d1 = groups taking rows in turn get their next item
# from a counter (the leader takes it, a group barrier shares it) instead of every groups-th
# item. A/B of the two on the verification cells, five rounds; then on d1 the grid, and the
# five GPU test binaries beside compute-sanitizer (racecheck, memcheck, initcheck, synccheck)
# over gpu_verify.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run2.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz ../base/*.xz $(ls peers/*.xz 2>/dev/null); do unxz $f; done; chmod +x tests/* sonic-bench run.sh ../base/sonic-bench; [ -f peers/flashinfer_peers ] && chmod +x peers/flashinfer_peers
md5sum sonic-bench ../base/sonic-bench tests/* $(ls peers/flashinfer_peers 2>/dev/null) > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
CELLS="verify_uniform:f32:128256:8,verify_uniform:f32:128256:32,verify_uniform:f32:128256:128,verify_uniform:f32:151936:32,verify_hetero:f32:128256:8,verify_hetero:f32:128256:32,verify_hetero:f32:128256:128,verify_hetero:f32:151936:32,verify_sampled:f32:128256:32,verify_sampled:f32:128256:128,verify_sampled:f32:151936:32,verify_accept70:f32:128256:32,verify_accepted:f32:128256:32"
AB_SECONDS=40 timeout 200 bash ./run.sh ab $W/ab "$CELLS" 5 base=../base/sonic-bench d1=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
timeout 60 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"; grep -A10 "Exact pass against" $W/grid/sonic-bench.md | tail -7
if [ -f peers/flashinfer_peers ]; then timeout 60 bash ./run.sh flashinfer --out $W/grid/flashinfer-peers.json > $W/flashinfer.log 2>&1; echo "flashinfer rc $? $(el)s"; tail -2 $W/flashinfer.log; fi
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_verify san/tests/
LEFT=$(( 560 - $(el) - 15 )); echo "sanitizer budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=4 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
SP=$!
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch" $W/tests.log | head -20
wait $SP; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
echo "elapsed $(el)"
