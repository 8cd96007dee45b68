#!/usr/bin/env bash
# Run 4 (session 41), one call. Builds: base = session 40's final kernels; l2 = run 3's build;
# l3 = the candidate final build: l2 with the listed split capped at one step, from one warp
# a tile to two (run 3 measured four to eight at V = 32000 slower), and the grid raised only
# there. A/B of the three, four rounds; the grid on l3 with FlashInfer's harness after it in
# the same call; then on l3 the five GPU test binaries beside compute-sanitizer (racecheck,
# memcheck, initcheck, synccheck) over the three binaries whose kernels include stage 1.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run4.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz ../base/*.xz ../l2/*.xz peers/*.xz; do unxz $f; done; chmod +x tests/* sonic-bench run.sh ../base/sonic-bench ../l2/sonic-bench peers/flashinfer_peers
md5sum sonic-bench ../base/sonic-bench ../l2/sonic-bench tests/* peers/flashinfer_peers > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
CELLS="heterogeneous:f32:128256:8,heterogeneous:f32:128256:64,heterogeneous:f32:151936:64,heterogeneous:f32:32000:64,heterogeneous:bf16:128256:64,heterogeneous:bf16:151936:64,heterogeneous:bf16:32000:64,heterogeneous:f32:262144:64,heterogeneous:f32:128256:256,topk50_topp09_t07:f32:128256:64,random_full:f32:128256:64,heterogeneous:f32:151936:8"
AB_SECONDS=40 timeout 170 bash ./run.sh ab $W/ab "$CELLS" 4 base=../base/sonic-bench l2=../l2/sonic-bench l3=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
timeout 60 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"; grep -A10 "Exact pass against" $W/grid/sonic-bench.md | tail -7
timeout 80 bash ./run.sh flashinfer --out $W/grid/flashinfer-peers.json > $W/flashinfer.log 2>&1; echo "flashinfer rc $? $(el)s"; tail -1 $W/flashinfer.log
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_sampler tests/gpu_reliability tests/gpu_infra san/tests/
LEFT=$(( 420 - $(el) )); echo "sanitizer budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=8 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
SP=$!
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch" $W/tests.log | head -20
wait $SP; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
echo "elapsed $(el)"
