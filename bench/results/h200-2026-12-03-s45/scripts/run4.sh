#!/usr/bin/env bash
# Run 4 (session 45), one call. Run 3's source counters put 7.2% of verify_rows' stall samples
# at heterogeneous B = 128 on one wait for a featured row's penalty counts, loaded in their
# tile's prologue. c1: y5 (the landed build, 947b191) with each thread asking L2 for its
# tokens' counts of the block's next tile as it loads this tile's (one prefetch.global.L2;
# ptxas: the same 1652 B). A/B of y5 and c1 on 16 verification cells (four rounds); Nsight
# durations (y5 and c1, heterogeneous B = 32 and 128); the grid on c1 with FlashInfer's
# harness; the five GPU test binaries on c1 beside the four sanitizers over its gpu_verify.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run4.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz ../y5/*.xz peers/*.xz; do unxz $f; done
chmod +x tests/* sonic-bench run.sh ../y5/sonic-bench peers/flashinfer_peers
md5sum sonic-bench ../y5/sonic-bench tests/* peers/flashinfer_peers > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
CELLS="verify_uniform:f32:128256:1,verify_uniform:f32:128256:8,verify_uniform:f32:128256:32,verify_uniform:f32:128256:128,verify_uniform:f32:151936:32,verify_sampled:f32:128256:8,verify_sampled:f32:128256:32,verify_sampled:f32:128256:128,verify_hetero:f32:128256:8,verify_hetero:f32:128256:32,verify_hetero:f32:128256:128,verify_hetero:f32:151936:32,verify_hetero:f32:151936:128,verify_accepted:f32:128256:32,verify_accept70:f32:128256:32,verify_accept70:f32:128256:128"
AB_SECONDS=45 timeout 200 bash ./run.sh ab $W/ab "$CELLS" 4 y5=../y5/sonic-bench c1=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
mkdir -p $W/nsight
for b in y5 c1; do
  bin=./sonic-bench; [ $b = y5 ] && bin=../y5/sonic-bench
  for cell in verify_hetero:f32:128256:32 verify_hetero:f32:128256:128; do
    name=$b-$(echo $cell | tr ':' '-')
    timeout 50 ncu --clock-control none --graph-profiling node -k "regex:^verify_" --launch-skip 30 --launch-count 3 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      -f -o /tmp/$name $bin --only $cell --replays 20 --out /tmp/bench-$name > /dev/null 2>$W/nsight/$name.err
    echo "ncu $name rc $? $(el)s"
    ncu --import /tmp/$name.ncu-rep --page details > $W/nsight/$name-details.txt 2>&1
    grep -E "^  [a-z_]+ \(|Duration|DRAM Throughput|Achieved Occupancy|Warp Cycles Per Issued|Registers Per" $W/nsight/$name-details.txt > $W/nsight/$name-summary.txt
    grep -E "^  [a-z]|Duration" $W/nsight/$name-summary.txt
  done
done
timeout 90 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"; grep -E "verify_hetero" $W/grid/sonic-bench.md | head -8
timeout 60 bash ./run.sh flashinfer --out $W/grid/flashinfer-peers.json > $W/flashinfer.log 2>&1; echo "flashinfer rc $? $(el)s"; tail -1 $W/flashinfer.log
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_verify san/tests/
LEFT=$(( 540 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=4 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
SP=$!
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch|differ" $W/tests.log | head -20
wait $SP; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
echo "elapsed $(el)"
