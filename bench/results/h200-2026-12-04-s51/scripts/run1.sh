#!/usr/bin/env bash
# Run 1 (session 51), one call. Source counters (SASS stall samples) of the kernels that bound
# heterogeneous f32 V = 128256, B = 256 and of stage 2 at top-k 50 + top-p, B = 1; Nsight
# summaries of top-k 50 + top-p B = 1 and verify_hetero B = 8; A/B of base (session 50's
# final build) against e1 (the host letting the stage-1 kernels run side by side on grids of
# any size, OVERLAP_STAGE1_WAVES = 64; same PTX) on grids of ten waves and more.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run1.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in base/*.xz e1/*.xz; do unxz $f & done; wait
chmod +x */sonic-bench base/run.sh
md5sum */sonic-bench > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
cd $C/base; mkdir -p tests
H=heterogeneous:f32:128256:256
for k in sample_tiles sample_tiles_mass sample_rows_two_per_sm exact_histogram_runs exact_bins_two_per_sm exact_gather_runs exact_finish_two_per_sm; do
  timeout 60 bash ./run.sh profile-source $H $k $W/source >> $W/source.log 2>&1; echo "source $k rc $? $(el)s"
done
timeout 60 bash ./run.sh profile-source topk50_topp09_t07:f32:128256:1 sample_rows_quiet $W/source >> $W/source.log 2>&1; echo "source quiet rc $? $(el)s"
timeout 60 bash ./run.sh profile-source topk50_topp09_t07:f32:128256:1 sample_tiles_ring $W/source >> $W/source.log 2>&1; echo "source ring rc $? $(el)s"
timeout 40 bash ./run.sh profile topk50_topp09_t07:f32:128256:1 $W/nsight > $W/nsight.log 2>&1; echo "nsight topk rc $? $(el)s"
mkdir -p $W/nsight-verify
timeout 60 ncu --clock-control none --graph-profiling node -k "regex:verify_" --launch-skip 30 --launch-count 6 \
  --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
  -f -o $W/nsight-verify/vh8 ./sonic-bench --only verify_hetero:f32:128256:8 --replays 40 --out $W/nsight-verify/bench > $W/nsight-verify.log 2>&1
echo "nsight verify rc $? $(el)s"
ncu --import $W/nsight-verify/vh8.ncu-rep --page details > $W/nsight-verify/vh8-details.txt 2>&1
grep -E "^  [a-z_]+ \(|Duration|DRAM Throughput|Achieved Occupancy|Registers Per Thread" $W/nsight-verify/vh8-details.txt > $W/nsight-verify/vh8-summary.txt
rm -f $W/nsight*/*.ncu-rep
for d in nsight nsight-verify; do echo "== $d"; grep -E "^  [a-z_]+ \(|Duration" $W/$d/*-summary.txt | paste - - | awk '{print $1, $(NF)}'; done
CELLS="heterogeneous:f32:128256:1024,heterogeneous:bf16:128256:1024,heterogeneous:f32:151936:1024,heterogeneous:bf16:151936:1024,heterogeneous:f32:262144:1024,heterogeneous:f32:262144:256,heterogeneous:f32:32000:1024"
AB_SECONDS=60 timeout 240 bash ./run.sh ab $W/ab "$CELLS" 4 base=./sonic-bench e1=../e1/sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
echo "elapsed $(el)"
