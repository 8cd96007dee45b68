#!/usr/bin/env bash
# Run 3 (session 56), one call. base: session 55's final build (PTX 28d1dd97). vh: run 2's
# build (verification's layout from the last call's chains). vh2: vh with groups in turn for
# few rows only when they give a row at least four times the blocks one round would
# (`verify::IN_TURN_GAIN`; vh: more than one round's), and verify_chains' count issued before
# the step's round trip (vh: after the outputs' stores, the call's last instruction). vh2's
# five GPU test binaries beside the four sanitizers over gpu_verify; an A/B of the three on
# verification cells (four rounds); an Nsight summary of vh2 at verify_hetero B = 8; vh2's
# grid and FlashInfer's harness.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run3.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in */*.xz */tests/*.xz */peers/*.xz; do unxz $f & done; wait
chmod +x */sonic-bench vh2/tests/* */run.sh vh2/peers/flashinfer_peers
md5sum */sonic-bench vh2/tests/* */sampler_kernels.ptx vh2/peers/flashinfer_peers > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
cd $C/vh2
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_verify san/tests/
LEFT=$(( 290 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=4 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; grep -E "^==|test result|FAILED|panicked|mismatch|differ" $W/tests.log | head -40
wait; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
CELLS="verify_hetero:f32:128256:1,verify_hetero:f32:151936:1,verify_hetero:f32:128256:8,verify_hetero:f32:151936:8,verify_uniform:f32:128256:1,verify_uniform:f32:128256:8,verify_sampled:f32:128256:1,verify_sampled:f32:151936:1,verify_sampled:f32:128256:8,verify_accept70:f32:128256:8,verify_accepted:f32:128256:1,verify_accepted:f32:128256:8,verify_accepted:f32:151936:32,verify_hetero:f32:128256:32"
AB_SECONDS=90 timeout 220 bash ./run.sh ab $W/ab "$CELLS" 4 base=../base/sonic-bench vh=../vh/sonic-bench vh2=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
timeout 45 bash ./run.sh profile verify_hetero:f32:128256:8 $W/nsight > $W/nsight.log 2>&1; echo "profile rc $? $(el)s"
rm -f $W/nsight/*.ncu-rep
timeout 75 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"
timeout 30 bash ./run.sh flashinfer --out $W/grid/flashinfer-peers.json > $W/flashinfer.log 2>&1; echo "flashinfer rc $? $(el)s"; tail -1 $W/flashinfer.log
echo "elapsed $(el)"
