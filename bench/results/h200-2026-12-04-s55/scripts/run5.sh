#!/usr/bin/env bash
# Run 5 (session 55), one call. elbt: the landed build (dc34c24, PTX 52a55b09). pf: elbt with
# the band-scale table (`fixed::BAND_SCALES`, now one unmangled static) asked of L1 by every
# thread (`prefetch.global.L1`, four lines) at the start of the row kernels that look it up
# (stage 2's four builds, exact_bins, exact_gather, exact_finish, exact_tail, verify_rows,
# verify_draws), before their wait for the previous kernel; and `kth_key_floor`'s list
# positions computed (2^level - 1), not read from a table. Run 4's source counters put 9% of a
# lone flat top-p row's `sample_rows` samples on cold lookups of the table. pf's five GPU test
# binaries beside the four sanitizers; an A/B of the two (four rounds); Nsight summaries of pf
# at flat top-p B = 1 and top-k 50 + top-p B = 1; pf's grid and FlashInfer's harness.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run5.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in */*.xz */tests/*.xz */peers/*.xz; do unxz $f & done; wait
chmod +x */sonic-bench pf/tests/* pf/run.sh pf/peers/flashinfer_peers
md5sum */sonic-bench pf/tests/* pf/sampler_kernels.ptx pf/peers/flashinfer_peers > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
cd $C/pf
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_sampler tests/gpu_reliability tests/gpu_infra san/tests/
LEFT=$(( 290 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=8 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch|differ" $W/tests.log | head -20
wait; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:1,flat_topp095:f32:151936:64,flat_topp095:f32:151936:256,flat_full:f32:128256:1,flat_full:f32:128256:64,flat_full:f32:151936:64,peaked_topp095:f32:128256:1,peaked_topp095:f32:128256:64,heterogeneous:f32:128256:1,heterogeneous:f32:128256:8,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,topk50_topp09_t07:f32:128256:1,topk50_topp09_t07:f32:128256:8,topk50_topp09_t07:f32:128256:64,random_full:f32:128256:1,random_full:f32:32000:1,crowded_topk50:f32:128256:1,greedy:f32:128256:1,verify_hetero:f32:128256:1,verify_hetero:f32:128256:8,verify_sampled:f32:128256:8"
AB_SECONDS=80 timeout 170 bash ./run.sh ab $W/ab "$CELLS" 4 elbt=../elbt/sonic-bench pf=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
for cell in flat_topp095:f32:128256:1 topk50_topp09_t07:f32:128256:1; do timeout 40 bash ./run.sh profile $cell $W/nsight > $W/nsight-$(echo $cell | tr ':' '-').log 2>&1; echo "profile $cell rc $? $(el)s"; done
rm -f $W/nsight/*.ncu-rep
timeout 70 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"; grep -E "(flat_topp095|flat_full) \| f32 \| (128256|151936) \| (1|64|256) " $W/grid/sonic-bench.md | head -12
timeout 30 bash ./run.sh flashinfer --out $W/grid/flashinfer-peers.json > $W/flashinfer.log 2>&1; echo "flashinfer rc $? $(el)s"; tail -1 $W/flashinfer.log
echo "elapsed $(el)"
