#!/usr/bin/env bash
# Run 3 (session 55), one call. wf: session 54's final build (PTX 67ba1a64). bt: wf with
# `exact_bins` taking fewer round trips: the one-block-per-SM build requests eight tile
# histogram words a thread at once (four before) and its tile masses two tiles a warp per turn,
# every stage-1 record word and sub-bin of both before any is summed (the two-per-SM build
# keeps four and one, its code restructured the same way: 732 B of spills, 676 before); no
# release fence or arrival store after the bins outside `exact_tail`. elbt: bt with
# `exact_finish` reading each tile's sure mass and the draw's seed and step with the gathered
# keys (both were read after the decision, two round trips later) and one barrier, not five,
# handing the drawn tile to the block. elbt's five GPU test binaries beside the four
# sanitizers; an A/B of the three (four rounds); Nsight summaries of elbt at flat top-p 0.95
# B = 1 and 64; elbt's grid and FlashInfer's harness.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run3.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in */*.xz */tests/*.xz */peers/*.xz; do unxz $f & done; wait
chmod +x */sonic-bench elbt/tests/* elbt/run.sh elbt/peers/flashinfer_peers
md5sum */sonic-bench elbt/tests/* elbt/sampler_kernels.ptx elbt/peers/flashinfer_peers > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
cd $C/elbt
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_sampler tests/gpu_reliability tests/gpu_infra san/tests/
LEFT=$(( 300 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=8 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch|differ" $W/tests.log | head -20
wait; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:1,flat_topp095:f32:151936:64,flat_topp095:f32:151936:256,flat_topp095:bf16:128256:256,flat_full:f32:128256:1,flat_full:f32:128256:64,flat_full:f32:151936:64,peaked_topp095:f32:128256:1,peaked_topp095:f32:128256:64,peaked_topp095:f32:128256:256,heterogeneous:f32:128256:8,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,heterogeneous:bf16:128256:256,alternating_topp095:f32:128256:64"
AB_SECONDS=80 timeout 170 bash ./run.sh ab $W/ab "$CELLS" 4 wf=../wf/sonic-bench bt=../bt/sonic-bench elbt=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
for cell in flat_topp095:f32:128256:1 flat_topp095:f32:128256:64; do timeout 40 bash ./run.sh profile $cell $W/nsight > $W/nsight-$(echo $cell | tr ':' '-').log 2>&1; echo "profile $cell rc $? $(el)s"; done
rm -f $W/nsight/*.ncu-rep
timeout 70 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"; grep -E "(flat_topp095|flat_full) \| f32 \| (128256|151936) \| (1|64|256) " $W/grid/sonic-bench.md | head -12
timeout 30 bash ./run.sh flashinfer --out $W/grid/flashinfer-peers.json > $W/flashinfer.log 2>&1; echo "flashinfer rc $? $(el)s"; tail -1 $W/flashinfer.log
echo "elapsed $(el)"
