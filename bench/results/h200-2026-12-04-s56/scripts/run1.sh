#!/usr/bin/env bash
# Run 1 (session 56), one call. base: session 55's final build (PTX 28d1dd97), the landed one.
# fp: base with (a) verification's groups taking rows in turn whenever they give a row more
# blocks than one round would (`verify::group_shape`: at least half of the requests random;
# before, only with more target rows than half the grid), and (b) `sample_tiles`' featured
# rows (bitmask, bias or penalties; outside the ring build) asking L2 for their logits and
# penalty counts six rounds ahead, and the mass scan's for their counts (they load both in
# their round). fp's five GPU test binaries beside the four sanitizers over gpu_sampler,
# gpu_reliability, gpu_infra and gpu_verify; an A/B of the two on verification and step cells
# (four rounds); Nsight summaries of verify_hetero B = 8 on both (run.sh profile now takes
# verification cells); fp's grid and FlashInfer's harness.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run1.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in */*.xz */tests/*.xz */peers/*.xz; do unxz $f & done; wait
chmod +x */sonic-bench fp/tests/* */run.sh fp/peers/flashinfer_peers
md5sum */sonic-bench fp/tests/* */sampler_kernels.ptx fp/peers/flashinfer_peers > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
cd $C/fp
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_sampler tests/gpu_reliability tests/gpu_infra tests/gpu_verify san/tests/
LEFT=$(( 280 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=8 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch|differ|calls per layout" $W/tests.log | head -20
wait; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
CELLS="verify_hetero:f32:128256:1,verify_hetero:f32:151936:1,verify_hetero:f32:128256:8,verify_hetero:f32:151936:8,verify_uniform:f32:128256:1,verify_uniform:f32:128256:8,verify_uniform:f32:151936:8,verify_sampled:f32:128256:1,verify_sampled:f32:128256:8,verify_sampled:f32:151936:8,verify_accept70:f32:128256:8,verify_hetero:f32:128256:32,heterogeneous:f32:128256:8,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,heterogeneous:f32:128256:1024,heterogeneous:f32:151936:64,heterogeneous:f32:151936:256,heterogeneous:bf16:128256:256,topk50_topp09_t07:f32:128256:256,random_full:f32:128256:256,greedy:f32:128256:1024"
AB_SECONDS=90 timeout 230 bash ./run.sh ab $W/ab "$CELLS" 4 base=../base/sonic-bench fp=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
for b in base fp; do timeout 45 bash ../$b/run.sh profile verify_hetero:f32:128256:8 $W/nsight-$b > $W/nsight-$b.log 2>&1; echo "profile $b rc $? $(el)s"; done
rm -f $W/nsight-*/*.ncu-rep
timeout 75 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"
timeout 30 bash ./run.sh flashinfer --out $W/grid/flashinfer-peers.json > $W/flashinfer.log 2>&1; echo "flashinfer rc $? $(el)s"; tail -1 $W/flashinfer.log
echo "elapsed $(el)"
