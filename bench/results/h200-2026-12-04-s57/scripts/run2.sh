#!/usr/bin/env bash
# Run 2 (session 57), one call. base: the landed build (vh3, PTX c6f3162c). cs: chain_stats
# after _pad (run 1). wf: cs + rows handed out one at a time wait for their chain's earlier
# rows where the last call's chains mostly stopped at their first draft + the first pass's
# partials folded in one block reduction (PTX e19a7b07). swf: wf with run 1's timestamps.
# wf's five GPU test binaries beside the four sanitizers over gpu_verify; an A/B of base, cs
# and wf on verification cells (four rounds); swf's timestamps; wf's grid and FlashInfer.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run2.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in */*.xz */tests/*.xz; do unxz $f & done; wait
mkdir -p wf/peers && mv fi/flashinfer_peers wf/peers/
chmod +x */sonic-bench wf/tests/* wf/run.sh wf/peers/flashinfer_peers
md5sum */sonic-bench wf/tests/* wf/sampler_kernels.ptx wf/peers/flashinfer_peers > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
cd $C/wf
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_verify san/tests/
LEFT=$(( 270 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=4 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; grep -E "^==|test result|FAILED|panicked|mismatch|differ|rows wait" $W/tests.log | head -60
wait; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
CELLS="verify_hetero:f32:128256:1,verify_hetero:f32:128256:8,verify_hetero:f32:128256:32,verify_hetero:f32:128256:128,verify_hetero:f32:151936:1,verify_hetero:f32:151936:8,verify_hetero:f32:151936:32,verify_hetero:f32:151936:128,verify_uniform:f32:128256:8,verify_sampled:f32:128256:1,verify_sampled:f32:128256:8,verify_accept70:f32:128256:8,verify_accepted:f32:128256:1,verify_accepted:f32:128256:8,verify_accepted:f32:151936:32,verify_accepted:f32:128256:128"
AB_SECONDS=90 timeout 200 bash ./run.sh ab $W/ab "$CELLS" 4 base=$C/base/sonic-bench cs=$C/cs/sonic-bench wf=$C/wf/sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
SC="verify_hetero:f32:128256:1,verify_hetero:f32:128256:8,verify_hetero:f32:128256:32,verify_hetero:f32:151936:1,verify_hetero:f32:151936:8,verify_uniform:f32:128256:8,verify_sampled:f32:128256:8,verify_accept70:f32:128256:8,verify_accepted:f32:128256:8"
for i in 1 2; do SONIC_STAMPS=1 timeout 60 $C/swf/sonic-bench --only "$SC" --replays 30 --out $W/stamps-$i > $W/stamps-$i.log 2>&1; echo "stamps $i rc $? $(el)s"; done
grep "^STAMPS verify" $W/stamps-2.log
timeout 75 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"
timeout 30 bash ./run.sh flashinfer --out $W/grid/flashinfer-peers.json > $W/flashinfer.log 2>&1; echo "flashinfer rc $? $(el)s"; tail -1 $W/flashinfer.log
echo "elapsed $(el)"
