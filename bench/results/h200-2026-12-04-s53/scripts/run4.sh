#!/usr/bin/env bash
# Run 4 (session 53), one call: source counters sampled every 32 cycles on the landed build
# (fin, PTX 4f03e67c), for the next session's choice: the two-per-SM finish at flat top-p 0.95
# B = 256 (how much its spills cost: runs 1-3 showed that build losing 1.5-5% when its spills
# grew), `exact_bins` and `exact_finish` of one flat row (B = 1) and `exact_bins` at B = 64, and
# `verify_rows` of `verify_hetero` at B = 1, the cell where verification is slower than
# FlashInfer's.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run4.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" fin/sonic-bench.xz && rm fin/sonic-bench.xz
chmod +x fin/sonic-bench fin/run.sh
md5sum fin/sonic-bench > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
cd $C/fin; mkdir -p tests
export NCU_EXTRA="--warp-sampling-interval 0"
src() { timeout 90 bash ./run.sh profile-source $1 $2 $W/source >> $W/source.log 2>&1; echo "source $1 $2 rc $? $(el)s"; }
src flat_topp095:f32:128256:256 exact_finish_two_per_sm
src flat_topp095:f32:128256:1 exact_finish
src flat_topp095:f32:128256:1 exact_bins
src flat_topp095:f32:128256:64 exact_bins
src verify_hetero:f32:128256:1 verify_rows
timeout 60 bash ./run.sh profile verify_hetero:f32:128256:1 $W/nsight > /dev/null 2>&1; echo "nsight verify rc $? $(el)s"
rm -f $W/nsight/*.ncu-rep
for f in $W/nsight/*-summary.txt; do echo "== $f"; grep -E "^  [a-z_]+ \(|Duration" $f | paste - - | awk '{print $1, $(NF)}'; done
grep -E "Duration|Warp Cycles Per Issued|wrote" $W/source.log
echo "elapsed $(el)"
