#!/usr/bin/env bash
# Run 6 (session 57), one call. wf4: run 4's build (PTX 3708d7b3). pf: wf4 whose verification
# kernels' thread 0 asks L1 for the band-scale table as they start (PTX bead1d80). pf's five
# GPU test binaries beside the four sanitizers over gpu_verify; an A/B of wf4 and pf (four
# rounds). (A first call was taken back before it finished; this one, the second, has no grid.)
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run6.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in */*.xz */tests/*.xz; do unxz $f & done; wait
mkdir -p pf/peers && mv fi/flashinfer_peers pf/peers/
chmod +x */sonic-bench pf/tests/* pf/run.sh pf/peers/flashinfer_peers
md5sum */sonic-bench pf/tests/* pf/sampler_kernels.ptx pf/peers/flashinfer_peers > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
cd $C/pf
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_verify san/tests/
LEFT=$(( 235 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=4 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
CELLS="verify_hetero:f32:128256:1,verify_hetero:f32:128256:8,verify_hetero:f32:128256:32,verify_hetero:f32:128256:128,verify_hetero:f32:151936:1,verify_hetero:f32:151936:8,verify_hetero:f32:151936:32,verify_hetero:f32:151936:128,verify_uniform:f32:128256:8,verify_sampled:f32:128256:1,verify_sampled:f32:128256:8,verify_accept70:f32:128256:8,verify_accepted:f32:128256:8"
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; grep -E "^==|test result|FAILED|panicked|mismatch|differ" $W/tests.log | head -40
wait; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
AB_SECONDS=90 timeout 150 bash ./run.sh ab $W/ab "$CELLS" 4 wf4=$C/wf4/sonic-bench pf=$C/pf/sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
echo "elapsed $(el)"
