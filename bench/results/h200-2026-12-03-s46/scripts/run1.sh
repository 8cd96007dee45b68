#!/usr/bin/env bash
# Run 1 (session 46), one call. verify_draws' residual sums: v1 takes a lane's eight tokens of a
# chunk in one basic block (selects, no branch per token; the screen as a code, a branch-free
# floor test), v2 is v1 with the weights summed as two u64 halves of E[d] (the fraction
# selected, not the 128-bit weight). A/B of base (c55eb62), v1 and v2 on 13 verification cells
# (four rounds); Nsight durations of the verification kernels (base and v2: uniform and
# heterogeneous B = 128); Nsight durations of the step kernels at random_full and top-k 50 +
# top-p B = 256 (unchanged kernels, for the next choice of work); the grid on v2 with
# FlashInfer's harness; the five GPU test binaries on v2 beside the four sanitizers over its
# gpu_verify.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run1.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz ../base/*.xz ../v1/*.xz peers/*.xz; do unxz $f; done
chmod +x tests/* sonic-bench run.sh ../base/sonic-bench ../v1/sonic-bench peers/flashinfer_peers
md5sum sonic-bench ../base/sonic-bench ../v1/sonic-bench tests/* peers/flashinfer_peers > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
CELLS="verify_uniform:f32:128256:1,verify_uniform:f32:128256:8,verify_uniform:f32:128256:32,verify_uniform:f32:128256:128,verify_uniform:f32:151936:32,verify_sampled:f32:128256:8,verify_sampled:f32:128256:32,verify_sampled:f32:128256:128,verify_hetero:f32:128256:8,verify_hetero:f32:128256:32,verify_hetero:f32:128256:128,verify_hetero:f32:151936:128,verify_accepted:f32:128256:32"
AB_SECONDS=45 timeout 200 bash ./run.sh ab $W/ab "$CELLS" 4 base=../base/sonic-bench v1=../v1/sonic-bench v2=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
mkdir -p $W/nsight
for b in base v2; do
  bin=./sonic-bench; [ $b = base ] && bin=../base/sonic-bench
  for cell in verify_uniform:f32:128256:128 verify_hetero:f32:128256:128; do
    name=$b-$(echo $cell | tr ':' '-')
    timeout 50 ncu --clock-control none --graph-profiling node -k "regex:^verify_" --launch-skip 30 --launch-count 3 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      -f -o /tmp/$name $bin --only $cell --replays 20 --out /tmp/bench-$name > /dev/null 2>$W/nsight/$name.err
    echo "ncu $name rc $? $(el)s"
    ncu --import /tmp/$name.ncu-rep --page details > $W/nsight/$name-details.txt 2>&1
    grep -E "^  [a-z_]+ \(|Duration|DRAM Throughput|Achieved Occupancy|Warp Cycles Per Issued|Registers Per|Issue Slots Busy" $W/nsight/$name-details.txt > $W/nsight/$name-summary.txt
    grep -E "^  [a-z]|Duration" $W/nsight/$name-summary.txt
  done
done
for cell in random_full:f32:128256:256 topk50_topp09_t07:f32:128256:256 random_full:f32:128256:1024; do
  name=step-$(echo $cell | tr ':' '-')
  timeout 60 ncu --clock-control none --graph-profiling node -k "regex:^(sample_|exact_)" --launch-skip 30 --launch-count 6 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    -f -o /tmp/$name ./sonic-bench --only $cell --replays 20 --out /tmp/bench-$name > /dev/null 2>$W/nsight/$name.err
  echo "ncu $name rc $? $(el)s"
  ncu --import /tmp/$name.ncu-rep --page details > $W/nsight/$name-details.txt 2>&1
  grep -E "^  [a-z_]+ \(|Duration|DRAM Throughput|Achieved Occupancy|Warp Cycles Per Issued|Registers Per|Issue Slots Busy" $W/nsight/$name-details.txt > $W/nsight/$name-summary.txt
  grep -E "^  [a-z]|Duration" $W/nsight/$name-summary.txt
done
timeout 90 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"; grep -E "verify_hetero" $W/grid/sonic-bench.md | head -8
timeout 60 bash ./run.sh flashinfer --out $W/grid/flashinfer-peers.json > $W/flashinfer.log 2>&1; echo "flashinfer rc $? $(el)s"; tail -1 $W/flashinfer.log
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_verify san/tests/
LEFT=$(( 560 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=4 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
SP=$!
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch|differ" $W/tests.log | head -20
wait $SP; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
echo "elapsed $(el)"
