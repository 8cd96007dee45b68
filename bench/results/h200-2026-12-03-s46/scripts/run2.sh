#!/usr/bin/env bash
# Run 2 (session 46), one call. Run 1: v2 (verify_draws' eight tokens a lane in one basic block,
# weights summed in two u64 halves) took verify_draws 133.0 -> 120.5 us at uniform B = 128 under
# Nsight, but its DRAM throughput is 25%: one chunk in registers is all a warp has in flight.
# v3: v2, and each warp asks L2 for its chunks three past the next one (DRAW_L2_AHEAD 2); v4:
# six (DRAW_L2_AHEAD 5). A/B of base (c55eb62), v2, v3, v4 on 13 verification cells (four
# rounds); Nsight durations of the verification kernels on v3 and v4 (uniform and heterogeneous
# B = 128); source counters of v3's verify_draws at uniform B = 128, and of the two stage-1
# kernels (unchanged) at top-k 50 + top-p and random_full B = 256, for the next choice of work.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run2.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in sonic-bench.xz ../base/*.xz ../v3/*.xz ../v4/*.xz; do unxz $f; done
chmod +x sonic-bench run.sh ../base/sonic-bench ../v3/sonic-bench ../v4/sonic-bench
cp run.sh ../v3/run.sh
md5sum sonic-bench ../base/sonic-bench ../v3/sonic-bench ../v4/sonic-bench > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
CELLS="verify_uniform:f32:128256:1,verify_uniform:f32:128256:8,verify_uniform:f32:128256:32,verify_uniform:f32:128256:128,verify_uniform:f32:151936:32,verify_sampled:f32:128256:8,verify_sampled:f32:128256:32,verify_sampled:f32:128256:128,verify_hetero:f32:128256:8,verify_hetero:f32:128256:32,verify_hetero:f32:128256:128,verify_hetero:f32:151936:128,verify_accepted:f32:128256:32"
AB_SECONDS=60 timeout 240 bash ./run.sh ab $W/ab "$CELLS" 4 base=../base/sonic-bench v2=./sonic-bench v3=../v3/sonic-bench v4=../v4/sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
mkdir -p $W/nsight
for b in v3 v4; do
  bin=../$b/sonic-bench
  for cell in verify_uniform:f32:128256:128 verify_hetero:f32:128256:128; do
    name=$b-$(echo $cell | tr ':' '-')
    timeout 50 ncu --clock-control none --graph-profiling node -k "regex:^verify_" --launch-skip 30 --launch-count 3 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      -f -o /tmp/$name $bin --only $cell --replays 20 --out /tmp/bench-$name > /dev/null 2>$W/nsight/$name.err
    echo "ncu $name rc $? $(el)s"
    ncu --import /tmp/$name.ncu-rep --page details > $W/nsight/$name-details.txt 2>&1
    grep -E "^  [a-z_]+ \(|Duration|DRAM Throughput|Achieved Occupancy|Warp Cycles Per Issued|Registers Per|Issue Slots Busy" $W/nsight/$name-details.txt > $W/nsight/$name-summary.txt
    grep -E "^  [a-z]|Duration|DRAM" $W/nsight/$name-summary.txt
  done
done
mkdir -p $W/source
timeout 120 bash ../v3/run.sh profile-source verify_uniform:f32:128256:128 verify_draws $W/source > $W/source/v3-verify_uniform-f32-128256-128-verify_draws.log 2>&1; echo "draws rc $? $(el)s"; tail -3 $W/source/v3-verify_uniform-f32-128256-128-verify_draws.log
timeout 100 bash ./run.sh profile-source topk50_topp09_t07:f32:128256:256 sample_tiles $W/source > $W/source/topk50_topp09_t07-f32-128256-256-sample_tiles.log 2>&1; echo "tiles rc $? $(el)s"; tail -3 $W/source/topk50_topp09_t07-f32-128256-256-sample_tiles.log
timeout 100 bash ./run.sh profile-source random_full:f32:128256:256 sample_tiles_mass $W/source > $W/source/random_full-f32-128256-256-sample_tiles_mass.log 2>&1; echo "mass rc $? $(el)s"; tail -3 $W/source/random_full-f32-128256-256-sample_tiles_mass.log
echo "elapsed $(el)"
