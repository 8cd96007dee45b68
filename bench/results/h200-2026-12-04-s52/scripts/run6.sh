#!/usr/bin/env bash
# Run 6 (session 52), one call: source counters sampled every 32 cycles on the landed build
# (fin, PTX 4f03e67c): stage 2 of a top-k 50 + top-p row at B = 1 (against run 1's, before the
# change), and the kernels of flat rows at V = 128256, B = 64 where the exact pass stands
# against the fast path: flat top-p 0.95's `sample_rows`, `exact_histogram_runs` and
# `exact_finish`, and `flat_full`'s `sample_rows_quiet`.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run6.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" fin/sonic-bench.xz && rm fin/sonic-bench.xz
chmod +x fin/sonic-bench fin/run.sh
md5sum fin/sonic-bench > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
cd $C/fin; mkdir -p tests
export NCU_EXTRA="--warp-sampling-interval 0"
src() { timeout 80 bash ./run.sh profile-source $1 $2 $W/source >> $W/source.log 2>&1; echo "source $1 $2 rc $? $(el)s"; }
src topk50_topp09_t07:f32:128256:1 sample_rows_quiet
src flat_topp095:f32:128256:64 sample_rows
src flat_topp095:f32:128256:64 exact_histogram_runs
src flat_topp095:f32:128256:64 exact_finish
src flat_full:f32:128256:64 sample_rows_quiet
grep -E "Duration|Warp Cycles Per Issued|wrote" $W/source.log
echo "elapsed $(el)"
