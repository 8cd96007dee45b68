#!/usr/bin/env bash
# Run 3 (session 57), one call. base: the landed build (vh3, PTX c6f3162c). wf: run 2's build
# (every earlier row waited for). wf2: a row waits for its request's first row only (PTX
# 2c4892f8). wf3: wf2 + the last block of a group to read a bin histogram back clears it, with
# no group barrier (PTX 64039548). swf3: wf3 with run 1's timestamps. wf3's five GPU test
# binaries beside the four sanitizers over gpu_verify; an A/B of base, wf, wf2 and wf3 (four
# rounds); swf3's timestamps; wf3's grid and FlashInfer.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run3.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in */*.xz */tests/*.xz; do unxz $f & done; wait
mkdir -p wf3/peers && mv fi/flashinfer_peers wf3/peers/
chmod +x */sonic-bench wf3/tests/* wf3/run.sh wf3/peers/flashinfer_peers
md5sum */sonic-bench wf3/tests/* wf3/sampler_kernels.ptx wf3/peers/flashinfer_peers > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
cd $C/wf3
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_verify san/tests/
LEFT=$(( 270 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=4 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; grep -E "^==|test result|FAILED|panicked|mismatch|differ" $W/tests.log | head -40; grep -E "rows wait: true|in turn" $W/tests.log | head -20
wait; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
CELLS="verify_hetero:f32:128256:1,verify_hetero:f32:128256:8,verify_hetero:f32:128256:32,verify_hetero:f32:128256:128,verify_hetero:f32:151936:1,verify_hetero:f32:151936:8,verify_hetero:f32:151936:32,verify_hetero:f32:151936:128,verify_uniform:f32:128256:8,verify_sampled:f32:128256:1,verify_sampled:f32:128256:8,verify_accept70:f32:128256:8,verify_accepted:f32:128256:1,verify_accepted:f32:128256:8,verify_accepted:f32:151936:32,verify_accepted:f32:128256:128"
AB_SECONDS=90 timeout 220 bash ./run.sh ab $W/ab "$CELLS" 4 base=$C/base/sonic-bench wf=$C/wf/sonic-bench wf2=$C/wf2/sonic-bench wf3=$C/wf3/sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
SC="verify_hetero:f32:128256:1,verify_hetero:f32:128256:8,verify_hetero:f32:128256:32,verify_hetero:f32:151936:1,verify_hetero:f32:151936:8,verify_uniform:f32:128256:8,verify_sampled:f32:128256:8,verify_accept70:f32:128256:8,verify_accepted:f32:128256:8"
for i in 1 2; do SONIC_STAMPS=1 timeout 60 $C/swf3/sonic-bench --only "$SC" --replays 30 --out $W/stamps-$i > $W/stamps-$i.log 2>&1; echo "stamps $i rc $? $(el)s"; done
grep "^STAMPS verify" $W/stamps-2.log
timeout 75 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"
timeout 30 bash ./run.sh flashinfer --out $W/grid/flashinfer-peers.json > $W/flashinfer.log 2>&1; echo "flashinfer rc $? $(el)s"; tail -1 $W/flashinfer.log
echo "elapsed $(el)"
