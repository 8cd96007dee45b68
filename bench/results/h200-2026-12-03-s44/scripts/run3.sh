#!/usr/bin/env bash
# Run 3 (session 43), one call. Run 2 found w4/w5's watch in the first pass costly for greedy
# calls (8-14%), uniform and sampled ones (2-3%), where it dropped no more rows, and worth 0.894x
# at heterogeneous B = 128. Builds: base = session 42's final kernels (13d1390, PTX 7dd5eb…);
# x1 = w4 with the first pass's watch only for rows that select (random with top-k or top-p);
# x2 = x1 without the first pass's watch: only a binned row's drop after its bin histogram.
# A/B of the three on run 2's 14 verification cells (four rounds); the grid on x1 with
# FlashInfer's harness in the same call; then the five GPU test binaries on x1 beside
# compute-sanitizer (racecheck, memcheck, initcheck, synccheck) over x1's and x2's gpu_verify,
# and x2's gpu_verify after the tests.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run3.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz ../base/*.xz ../x2/*.xz peers/*.xz; do unxz $f; done
chmod +x tests/* sonic-bench run.sh ../base/sonic-bench ../x2/sonic-bench ../x2/gpu_verify peers/flashinfer_peers
md5sum sonic-bench ../base/sonic-bench ../x2/sonic-bench ../x2/gpu_verify tests/* peers/flashinfer_peers > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
CELLS="verify_uniform:f32:128256:1,verify_uniform:f32:128256:8,verify_uniform:f32:128256:32,verify_uniform:f32:128256:128,verify_uniform:f32:151936:32,verify_sampled:f32:128256:8,verify_sampled:f32:128256:32,verify_sampled:f32:128256:128,verify_hetero:f32:128256:8,verify_hetero:f32:128256:32,verify_hetero:f32:128256:128,verify_accepted:f32:128256:32,verify_accept70:f32:128256:32,verify_accept70:f32:128256:128"
AB_SECONDS=45 timeout 150 bash ./run.sh ab $W/ab "$CELLS" 4 base=../base/sonic-bench x1=./sonic-bench x2=../x2/sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
timeout 90 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"; grep -E "verify_hetero" $W/grid/sonic-bench.md | head -8
timeout 60 bash ./run.sh flashinfer --out $W/grid/flashinfer-peers.json > $W/flashinfer.log 2>&1; echo "flashinfer rc $? $(el)s"; tail -1 $W/flashinfer.log
mkdir -p san/tests san2/tests; cp run.sh san/; cp run.sh san2/; cp tests/gpu_verify san/tests/; cp ../x2/gpu_verify san2/tests/
LEFT=$(( 520 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=4 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
SP=$!
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=4 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san2/run.sh sanitize $W/sanitizer-x2 > $W/sanitize-x2.log 2>&1; echo "rc $?" >> $W/sanitize-x2.log) &
SP2=$!
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch" $W/tests.log | head -20
REST=$(( 570 - $(el) )); [ $REST -gt 20 ] && { REQUIRE_GPU=1 timeout $REST ../x2/gpu_verify --test-threads=1 > $W/tests-x2-gpu_verify.log 2>&1; echo "x2 gpu_verify rc $? $(el)s"; grep -E "test result" $W/tests-x2-gpu_verify.log; }
wait $SP; echo "sanitize x1 $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
wait $SP2; echo "sanitize x2 $(tail -1 $W/sanitize-x2.log) $(el)s"; cat $W/sanitizer-x2/summary.txt
echo "elapsed $(el)"
