#!/usr/bin/env bash
# Run 1 (session 58), one call. base: the landed build (ecb17a6, PTX 3708d7b3). lm: base where a
# selecting verification row that wants log-probabilities under a min-p floor adds its band sums
# in the first pass and has them weighed in its bin histogram, with no `count_masses` pass (PTX
# 9e51ae08). lm's five GPU test binaries beside the four sanitizers over gpu_verify; an A/B of
# base and lm on verification cells (four rounds).
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run1.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in */*.xz */tests/*.xz; do unxz $f & done; wait
mv fi/flashinfer_peers lm/peers/
chmod +x */sonic-bench lm/tests/* lm/run.sh lm/peers/flashinfer_peers
md5sum */sonic-bench lm/tests/* lm/sampler_kernels.ptx lm/peers/flashinfer_peers > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
cd $C/lm
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_verify san/tests/
LEFT=$(( 270 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=4 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; grep -E "^==|test result|FAILED|panicked|mismatch|differ" $W/tests.log | head -40
wait; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
CELLS="verify_hetero:f32:128256:1,verify_hetero:f32:128256:8,verify_hetero:f32:128256:32,verify_hetero:f32:128256:128,verify_hetero:f32:151936:1,verify_hetero:f32:151936:8,verify_hetero:f32:151936:32,verify_hetero:f32:151936:128,verify_uniform:f32:128256:8,verify_uniform:f32:128256:128,verify_sampled:f32:128256:8,verify_accepted:f32:128256:8"
AB_SECONDS=90 timeout 170 bash ./run.sh ab $W/ab "$CELLS" 4 base=$C/base/sonic-bench lm=$C/lm/sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
echo "elapsed $(el)"
