#!/usr/bin/env bash
# Run 4 (session 56), one call. base: session 55's final build (PTX 28d1dd97). vh2: run 3's
# build. vh3: vh2 with verify_chains adding a warp's chains to `chain_stats` in one atomic
# (vh2: one per request on the one word, which cost all-greedy calls 1.3–2.5%, growing with
# B, though their layout never uses it). vh3's five GPU test binaries beside the four
# sanitizers over gpu_verify; an A/B of the three on verification cells (four rounds); vh3's
# grid and FlashInfer's harness.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run4.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in */*.xz */tests/*.xz */peers/*.xz; do unxz $f & done; wait
chmod +x */sonic-bench vh3/tests/* */run.sh vh3/peers/flashinfer_peers
md5sum */sonic-bench vh3/tests/* */sampler_kernels.ptx vh3/peers/flashinfer_peers > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
cd $C/vh3
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_verify san/tests/
LEFT=$(( 260 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=4 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; grep -E "^==|test result|FAILED|panicked|mismatch|differ" $W/tests.log | head -40
wait; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
CELLS="verify_hetero:f32:128256:1,verify_hetero:f32:128256:8,verify_hetero:f32:151936:8,verify_uniform:f32:128256:8,verify_sampled:f32:128256:1,verify_sampled:f32:128256:8,verify_accept70:f32:128256:8,verify_accepted:f32:128256:1,verify_accepted:f32:128256:8,verify_accepted:f32:151936:32,verify_accepted:f32:128256:128,verify_hetero:f32:128256:128"
AB_SECONDS=90 timeout 200 bash ./run.sh ab $W/ab "$CELLS" 4 base=../base/sonic-bench vh2=../vh2/sonic-bench vh3=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
timeout 75 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"
timeout 30 bash ./run.sh flashinfer --out $W/grid/flashinfer-peers.json > $W/flashinfer.log 2>&1; echo "flashinfer rc $? $(el)s"; tail -1 $W/flashinfer.log
echo "elapsed $(el)"
