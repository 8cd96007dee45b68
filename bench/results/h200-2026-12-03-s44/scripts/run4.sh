#!/usr/bin/env bash
# Run 4 (session 44), one call. Run 3 measured x2 (only the drop after a binned row's bin
# histogram) at 0.898x on heterogeneous B = 128 but 1.006-1.023x on the calls it cannot help.
# x3 is that drop alone: no first-pass flag, no watched-word slot, no moved check (the final
# candidate); x4 is x3 for groups alone (no check for a block alone, which added 140 B of
# spills). A/B of base, x2, x3 and x4 on 16 verification cells (four rounds); the grid on x3
# with FlashInfer's harness; Nsight durations of the three verification kernels at
# heterogeneous B = 8 and 128 and source counters of verify_rows at heterogeneous B = 8 (x3);
# then the five GPU test binaries on x3 beside compute-sanitizer (racecheck, memcheck,
# initcheck, synccheck) over x3's gpu_verify.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run4.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz ../base/*.xz ../x2/*.xz ../x4/*.xz peers/*.xz; do unxz $f; done
chmod +x tests/* sonic-bench run.sh ../base/sonic-bench ../x2/sonic-bench ../x4/sonic-bench peers/flashinfer_peers
md5sum sonic-bench ../base/sonic-bench ../x2/sonic-bench ../x4/sonic-bench tests/* peers/flashinfer_peers > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
CELLS="verify_uniform:f32:128256:1,verify_uniform:f32:128256:8,verify_uniform:f32:128256:32,verify_uniform:f32:128256:128,verify_uniform:f32:151936:32,verify_sampled:f32:128256:8,verify_sampled:f32:128256:32,verify_sampled:f32:128256:128,verify_hetero:f32:128256:8,verify_hetero:f32:128256:32,verify_hetero:f32:128256:128,verify_hetero:f32:151936:32,verify_hetero:f32:151936:128,verify_accepted:f32:128256:32,verify_accept70:f32:128256:32,verify_accept70:f32:128256:128"
AB_SECONDS=45 timeout 200 bash ./run.sh ab $W/ab "$CELLS" 4 base=../base/sonic-bench x2=../x2/sonic-bench x3=./sonic-bench x4=../x4/sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
timeout 90 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"; grep -E "verify_hetero" $W/grid/sonic-bench.md | head -8
timeout 60 bash ./run.sh flashinfer --out $W/grid/flashinfer-peers.json > $W/flashinfer.log 2>&1; echo "flashinfer rc $? $(el)s"; tail -1 $W/flashinfer.log
mkdir -p $W/nsight $W/source
for cell in verify_hetero:f32:128256:8 verify_hetero:f32:128256:128; do
  name=$(echo $cell | tr ':' '-')
  timeout 60 ncu --clock-control none --graph-profiling node -k "regex:^verify_" --launch-skip 30 --launch-count 3 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    -f -o /tmp/$name ./sonic-bench --only $cell --replays 20 --out /tmp/bench-$name > /dev/null 2>$W/nsight/$name.err
  echo "ncu $cell rc $? $(el)s"
  ncu --import /tmp/$name.ncu-rep --page details > $W/nsight/$name-details.txt 2>&1
  grep -E "^  [a-z_]+ \(|Duration|DRAM Throughput|Achieved Occupancy|Warp Cycles Per Issued|Registers Per" $W/nsight/$name-details.txt > $W/nsight/$name-summary.txt
  grep -E "^  [a-z]|Duration" $W/nsight/$name-summary.txt
done
timeout 90 bash ./run.sh profile-source verify_hetero:f32:128256:8 verify_rows $W/source > $W/source/verify_hetero-f32-128256-8-verify_rows.log 2>&1; echo "source rc $? $(el)s"; tail -3 $W/source/*.log
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_verify san/tests/
LEFT=$(( 560 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=4 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
SP=$!
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch" $W/tests.log | head -20
wait $SP; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
echo "elapsed $(el)"
