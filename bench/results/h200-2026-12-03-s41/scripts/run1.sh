#!/usr/bin/env bash
# Run 1 (session 41), one call, on session 40's final build (d2): where the time goes now.
# Nsight Compute durations of every kernel of heterogeneous sampling steps (B = 64, 256) and of
# the three verification kernels (uniform B = 32, 128; heterogeneous B = 32), then source
# counters (per-SASS-instruction stall samples) of the largest kernels of two of those cells.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run1.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in *.xz; do unxz $f; done; chmod +x sonic-bench run.sh
md5sum sonic-bench > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
mkdir -p $W/nsight
for cell in heterogeneous:f32:128256:64 heterogeneous:f32:128256:256 heterogeneous:f32:128256:8; do
  timeout 90 bash ./run.sh profile $cell $W/nsight > $W/nsight/$(echo $cell | tr ':' '-').log 2>&1; echo "profile $cell rc $? $(el)s"
  cat $W/nsight/$(echo $cell | tr ':' '-')-summary.txt | grep -E "^  [a-z]|Duration"
done
for cell in verify_uniform:f32:128256:32 verify_uniform:f32:128256:128 verify_hetero:f32:128256:32; do
  name=$(echo $cell | tr ':' '-')
  timeout 90 ncu --clock-control none --graph-profiling node -k "regex:^verify_" --launch-skip 30 --launch-count 3 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    -f -o /tmp/$name ./sonic-bench --only $cell --replays 20 --out /tmp/bench-$name > /dev/null 2>$W/nsight/$name.err
  echo "ncu $cell rc $? $(el)s"
  ncu --import /tmp/$name.ncu-rep --page details > $W/nsight/$name-details.txt 2>&1
  grep -E "^  [a-z_]+ \(|Duration|DRAM Throughput|Achieved Occupancy|Warp Cycles Per Issued|Registers Per" $W/nsight/$name-details.txt > $W/nsight/$name-summary.txt
  grep -E "^  [a-z]|Duration" $W/nsight/$name-summary.txt
done
rm -f $W/nsight/*.ncu-rep
mkdir -p $W/source
for ck in "heterogeneous:f32:128256:64 sample_tiles_ring" "heterogeneous:f32:128256:64 sample_tiles_mass" "heterogeneous:f32:128256:64 sample_rows" "verify_uniform:f32:128256:32 verify_rows" "verify_uniform:f32:128256:32 verify_draws"; do
  set -- $ck
  [ $(el) -gt 420 ] && { echo "skip $ck (time)"; continue; }
  timeout 100 bash ./run.sh profile-source $1 $2 $W/source > $W/source/$(echo $1 | tr ':' '-')-$2.log 2>&1; echo "source $ck rc $? $(el)s"
  tail -4 $W/source/$(echo $1 | tr ':' '-')-$2.log
done
echo "elapsed $(el)"
