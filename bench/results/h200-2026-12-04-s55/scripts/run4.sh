#!/usr/bin/env bash
# Run 4 (session 55), one call: fine-sampled source counters (--warp-sampling-interval 0) of
# the landed build (dc34c24, PTX 52a55b09) at flat top-p 0.95, V = 128256, B = 1: the busy
# stage 2 (`sample_rows`, which lists the row) and `exact_finish`; and `sample_rows_quiet` at
# top-k 50 + top-p, B = 1.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run4.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" fin/sonic-bench.xz && rm fin/sonic-bench.xz
chmod +x fin/sonic-bench fin/run.sh; md5sum fin/sonic-bench > $W/md5.txt
cd $C/fin; mkdir -p tests
export NCU_EXTRA="--warp-sampling-interval 0"
src() { timeout 70 bash ./run.sh profile-source $1 $2 $W/source >> $W/source.log 2>&1; echo "source $1 $2 rc $? $(el)s"; }
src flat_topp095:f32:128256:1 sample_rows
src flat_topp095:f32:128256:1 exact_finish
src topk50_topp09_t07:f32:128256:1 sample_rows_quiet
grep -E "Duration" $W/source.log
echo "elapsed $(el)"
