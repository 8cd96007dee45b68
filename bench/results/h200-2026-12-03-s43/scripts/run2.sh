#!/usr/bin/env bash
# Run 2 (session 43), one call. Builds: base = session 42's final kernels (13d1390, PTX 7dd5eb…);
# w4 = base, and verify_rows' first pass watches the request's rejection word (a load per warp
# and tile) for a later row of a chain held by a block alone or a group taking rows in turn,
# and leaves the pass when an earlier row has stopped the chain (a warp by a ballot; a row with
# a bias table as a block, through the bias table's barriers), and a binned row is dropped
# after its bin histogram when the chain stopped meanwhile (a group through a count in the
# row's head added before the histogram's exchange, a block alone by its own check);
# w5 = w4, and groups of a one-round call (few rows) watch and drop rows the same way.
# A/B of the three on 14 verification cells (four rounds); the grid on w5 with FlashInfer's
# harness in the same call; Nsight durations of the verification kernels; then the five GPU
# test binaries on w5 beside compute-sanitizer (racecheck, memcheck, initcheck, synccheck) over
# w5's gpu_verify, and w4's gpu_verify after them.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run2.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz ../base/*.xz ../w4/*.xz peers/*.xz; do unxz $f; done
chmod +x tests/* sonic-bench run.sh ../base/sonic-bench ../w4/sonic-bench ../w4/gpu_verify peers/flashinfer_peers
md5sum sonic-bench ../base/sonic-bench ../w4/sonic-bench ../w4/gpu_verify tests/* peers/flashinfer_peers > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
CELLS="verify_uniform:f32:128256:1,verify_uniform:f32:128256:8,verify_uniform:f32:128256:32,verify_uniform:f32:128256:128,verify_uniform:f32:151936:32,verify_sampled:f32:128256:8,verify_sampled:f32:128256:32,verify_sampled:f32:128256:128,verify_hetero:f32:128256:8,verify_hetero:f32:128256:32,verify_hetero:f32:128256:128,verify_accepted:f32:128256:32,verify_accept70:f32:128256:32,verify_accept70:f32:128256:128"
AB_SECONDS=45 timeout 200 bash ./run.sh ab $W/ab "$CELLS" 4 base=../base/sonic-bench w4=../w4/sonic-bench w5=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
timeout 60 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"; grep -E "verify_(uniform|hetero)" $W/grid/sonic-bench.md | head -16
timeout 80 bash ./run.sh flashinfer --out $W/grid/flashinfer-peers.json > $W/flashinfer.log 2>&1; echo "flashinfer rc $? $(el)s"; tail -1 $W/flashinfer.log
mkdir -p $W/nsight
for cell in verify_uniform:f32:128256:32 verify_hetero:f32:128256:32; do
  name=$(echo $cell | tr ':' '-')
  timeout 40 ncu --clock-control none --graph-profiling node -k "regex:^verify_" --launch-skip 30 --launch-count 3 \
    --section SpeedOfLight --section LaunchStats --section WarpStateStats \
    -f -o /tmp/$name ./sonic-bench --only $cell --replays 20 --out /tmp/bench-$name > /dev/null 2>$W/nsight/$name.err
  echo "ncu $cell rc $? $(el)s"
  ncu --import /tmp/$name.ncu-rep --page details > $W/nsight/$name-details.txt 2>&1
  grep -E "^  [a-z_]+ \(|Duration|DRAM Throughput|Warp Cycles Per Issued|Registers Per" $W/nsight/$name-details.txt > $W/nsight/$name-summary.txt
  grep -E "^  [a-z]|Duration" $W/nsight/$name-summary.txt
done
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_verify san/tests/
LEFT=$(( 545 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=4 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
SP=$!
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch" $W/tests.log | head -20
REST=$(( 585 - $(el) )); [ $REST -gt 20 ] && { REQUIRE_GPU=1 timeout $REST ../w4/gpu_verify --test-threads=1 > $W/tests-w4-gpu_verify.log 2>&1; echo "w4 gpu_verify rc $? $(el)s"; grep -E "test result" $W/tests-w4-gpu_verify.log; }
wait $SP; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
echo "elapsed $(el)"
