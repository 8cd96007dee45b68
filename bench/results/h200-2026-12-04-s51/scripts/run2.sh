#!/usr/bin/env bash
# Run 2 (session 51), one call. A/B of base (session 50's final build), e2 (the host launching
# exact_bins and exact_finish one block per SM whatever the batch; base's PTX) and e4
# (sample_tiles_mass loading penalty counts one round ahead); Nsight of heterogeneous f32
# B = 256 on e4; source counters at the finest sampling interval of stage 2 (top-k 50 + top-p,
# B = 1) and exact_finish (heterogeneous B = 8) on base; e4's five GPU test binaries beside the
# four sanitizers over gpu_sampler, gpu_reliability and gpu_infra (reduced sizes).
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run2.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in base/*.xz e2/*.xz e4/*.xz e4/tests/*.xz; do unxz $f & done; wait
chmod +x */sonic-bench e4/tests/* */run.sh
md5sum */sonic-bench e4/tests/* > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
cd $C/e4
CELLS="heterogeneous:f32:128256:8,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,heterogeneous:f32:128256:1024,heterogeneous:bf16:128256:256,heterogeneous:f32:151936:256,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,random_full:f32:128256:256,topk50_topp09_t07:f32:128256:256"
AB_SECONDS=60 timeout 230 bash ./run.sh ab $W/ab "$CELLS" 4 base=../base/sonic-bench e2=../e2/sonic-bench e4=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
timeout 40 bash ./run.sh profile heterogeneous:f32:128256:256 $W/nsight-e4 > $W/nsight-e4.log 2>&1; echo "nsight e4 rc $? $(el)s"
grep -E "^  [a-z_]+ \(|Duration" $W/nsight-e4/*-summary.txt | paste - - | awk '{print $1, $(NF)}'
rm -f $W/nsight*/*.ncu-rep
cd $C/base; mkdir -p tests
NCU_EXTRA="--sampling-interval 0" timeout 60 bash ./run.sh profile-source topk50_topp09_t07:f32:128256:1 sample_rows_quiet $W/source > $W/source.log 2>&1; echo "source quiet rc $? $(el)s"
NCU_EXTRA="--sampling-interval 0" timeout 60 bash ./run.sh profile-source heterogeneous:f32:128256:8 exact_finish $W/source >> $W/source.log 2>&1; echo "source finish rc $? $(el)s"
cd $C/e4
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_sampler tests/gpu_reliability tests/gpu_infra san/tests/
LEFT=$(( 540 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=8 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch|differ" $W/tests.log | head -20
wait; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
echo "elapsed $(el)"
