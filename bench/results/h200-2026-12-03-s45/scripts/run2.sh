#!/usr/bin/env bash
# Run 2 (session 45), one call. Run 1: y2 (a block alone's chain check after a binned row's bin
# histogram; all three lone-block checks out of line) 0.891-0.897x at heterogeneous B = 128 but
# 1.008-1.018x on the all-greedy calls; yz (y2 with plain untruncated rows caching nothing) lost
# more in verify_draws than it saved in verify_rows, so it is dropped. y5: the row-start check
# inline as before, the two later ones out of line (ptxas: 1652 B, base 1656). A/B of base, y2
# and y5 on 16 verification cells (four rounds); Nsight durations of the verification kernels
# (base and y5: accept70 B = 128, heterogeneous B = 128); the grid on y5 with FlashInfer's
# harness; the five GPU test binaries on y5 beside the four sanitizers over its gpu_verify.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run2.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz ../base/*.xz ../y2/*.xz peers/*.xz; do unxz $f; done
chmod +x tests/* sonic-bench run.sh ../base/sonic-bench ../y2/sonic-bench peers/flashinfer_peers
md5sum sonic-bench ../base/sonic-bench ../y2/sonic-bench tests/* peers/flashinfer_peers > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
CELLS="verify_uniform:f32:128256:1,verify_uniform:f32:128256:8,verify_uniform:f32:128256:32,verify_uniform:f32:128256:128,verify_uniform:f32:151936:32,verify_sampled:f32:128256:8,verify_sampled:f32:128256:32,verify_sampled:f32:128256:128,verify_hetero:f32:128256:8,verify_hetero:f32:128256:32,verify_hetero:f32:128256:128,verify_hetero:f32:151936:32,verify_hetero:f32:151936:128,verify_accepted:f32:128256:32,verify_accept70:f32:128256:32,verify_accept70:f32:128256:128"
AB_SECONDS=45 timeout 200 bash ./run.sh ab $W/ab "$CELLS" 4 base=../base/sonic-bench y2=../y2/sonic-bench y5=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
mkdir -p $W/nsight
for b in base y5; do
  bin=./sonic-bench; [ $b = base ] && bin=../base/sonic-bench
  for cell in verify_accept70:f32:128256:128 verify_hetero:f32:128256:128; do
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
LEFT=$(( 560 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=4 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
SP=$!
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch|differ" $W/tests.log | head -20
wait $SP; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
echo "elapsed $(el)"
