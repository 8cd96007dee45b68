#!/usr/bin/env bash
# Run 8 (session 53), one call: source counters sampled every 32 cycles on the landed build
# (n2f, PTX 95ca6c44) of the quiet two-per-SM stage 2 (2488 B of spills) at `random_full` and
# top-k 50 + top-p, V = 128256, B = 1024: how much of it its spills take, as run 4 measured for
# the two-per-SM finish.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run8.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" n2f/sonic-bench.xz && rm n2f/sonic-bench.xz
chmod +x n2f/sonic-bench n2f/run.sh
md5sum n2f/sonic-bench > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
cd $C/n2f; mkdir -p tests
export NCU_EXTRA="--warp-sampling-interval 0"
src() { timeout 90 bash ./run.sh profile-source $1 $2 $W/source >> $W/source.log 2>&1; echo "source $1 $2 rc $? $(el)s"; }
src random_full:f32:128256:1024 sample_rows_quiet_two_per_sm
src topk50_topp09_t07:f32:128256:1024 sample_rows_quiet_two_per_sm
grep -E "Duration|Warp Cycles Per Issued|wrote" $W/source.log
echo "elapsed $(el)"
