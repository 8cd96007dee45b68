#!/usr/bin/env bash
# Run 4 (session 57), one call. wf3: the landed build (64a42da, PTX 64039548). wf4: wf3 where
# only the thread whose span holds the draw's point walks its tokens again in `pick` (PTX
# 3708d7b3). swf4: wf4 with the stamps and a probe (a one-thread kernel stamps the GPU time
# just before four replays, alternating the two graphs, each timed by events). wf4's five GPU
# test binaries beside the four sanitizers over gpu_verify; an A/B of wf3 and wf4 (four
# rounds); swf4's stamps and probes; wf4's grid and FlashInfer.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run4.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in */*.xz */tests/*.xz; do unxz $f & done; wait
mkdir -p wf4/peers && mv fi/flashinfer_peers wf4/peers/
chmod +x */sonic-bench wf4/tests/* wf4/run.sh wf4/peers/flashinfer_peers
md5sum */sonic-bench wf4/tests/* wf4/sampler_kernels.ptx wf4/peers/flashinfer_peers > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
cd $C/wf4
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_verify san/tests/
LEFT=$(( 260 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=4 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; grep -E "^==|test result|FAILED|panicked|mismatch|differ" $W/tests.log | head -40
wait; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
CELLS="verify_hetero:f32:128256:1,verify_hetero:f32:128256:8,verify_hetero:f32:128256:32,verify_hetero:f32:128256:128,verify_hetero:f32:151936:1,verify_hetero:f32:151936:8,verify_hetero:f32:151936:32,verify_hetero:f32:151936:128,verify_uniform:f32:128256:8,verify_uniform:f32:128256:128,verify_sampled:f32:128256:1,verify_sampled:f32:128256:8,verify_accept70:f32:128256:8,verify_accepted:f32:128256:8"
AB_SECONDS=90 timeout 160 bash ./run.sh ab $W/ab "$CELLS" 4 wf3=$C/wf3/sonic-bench wf4=$C/wf4/sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
SC="verify_hetero:f32:128256:1,verify_hetero:f32:128256:8,verify_hetero:f32:151936:1,verify_hetero:f32:151936:8,verify_uniform:f32:128256:8,verify_accepted:f32:128256:8"
for i in 1 2; do SONIC_STAMPS=1 timeout 60 $C/swf4/sonic-bench --only "$SC" --replays 30 --out $W/stamps-$i > $W/stamps-$i.log 2>&1; echo "stamps $i rc $? $(el)s"; done
grep -E "^STAMPS verify|^PROBE|µs " $W/stamps-2.log | head -60
timeout 75 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"
timeout 30 bash ./run.sh flashinfer --out $W/grid/flashinfer-peers.json > $W/flashinfer.log 2>&1; echo "flashinfer rc $? $(el)s"; tail -1 $W/flashinfer.log
echo "elapsed $(el)"
