#!/usr/bin/env bash
# Run 5 (session 44), one call. Run 4: x3 (the drop after a binned row's bin histogram, for
# groups in turn and blocks alone) 0.887-0.898x at heterogeneous B = 128 but 1.004-1.016x on
# calls it cannot help (140 B more spills); x4 (groups in turn only) 0.918-0.981x at
# heterogeneous B = 32 and 0.989-1.000x elsewhere. Final candidate: x4 (this bundle). x6 is x3
# with a lone block's check as one `barrier.red.or` inside bin_histogram (the same 1788 B).
# A/B of base, x3, x4 and x6 on run 4's 16 cells (four rounds); the grid on x4 with FlashInfer's
# harness; then the five GPU test binaries on x4 beside compute-sanitizer (racecheck,
# memcheck, initcheck, synccheck) over x4's gpu_verify.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run5.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz ../base/*.xz ../x3/*.xz ../x6/*.xz peers/*.xz; do unxz $f; done
chmod +x tests/* sonic-bench run.sh ../base/sonic-bench ../x3/sonic-bench ../x6/sonic-bench peers/flashinfer_peers
md5sum sonic-bench ../base/sonic-bench ../x3/sonic-bench ../x6/sonic-bench tests/* peers/flashinfer_peers > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
CELLS="verify_uniform:f32:128256:1,verify_uniform:f32:128256:8,verify_uniform:f32:128256:32,verify_uniform:f32:128256:128,verify_uniform:f32:151936:32,verify_sampled:f32:128256:8,verify_sampled:f32:128256:32,verify_sampled:f32:128256:128,verify_hetero:f32:128256:8,verify_hetero:f32:128256:32,verify_hetero:f32:128256:128,verify_hetero:f32:151936:32,verify_hetero:f32:151936:128,verify_accepted:f32:128256:32,verify_accept70:f32:128256:32,verify_accept70:f32:128256:128"
AB_SECONDS=45 timeout 200 bash ./run.sh ab $W/ab "$CELLS" 4 base=../base/sonic-bench x3=../x3/sonic-bench x4=./sonic-bench x6=../x6/sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
timeout 90 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"; grep -E "verify_hetero" $W/grid/sonic-bench.md | head -8
timeout 60 bash ./run.sh flashinfer --out $W/grid/flashinfer-peers.json > $W/flashinfer.log 2>&1; echo "flashinfer rc $? $(el)s"; tail -1 $W/flashinfer.log
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_verify san/tests/
LEFT=$(( 520 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=4 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
SP=$!
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch" $W/tests.log | head -20
wait $SP; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
echo "elapsed $(el)"
