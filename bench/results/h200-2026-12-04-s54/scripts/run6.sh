#!/usr/bin/env bash
# Run 6 (session 54), one call. bc: run 5's landed build (PTX ef527a1e). wf: `summarize` in the
# builds of one block per SM (`sample_rows`, `sample_rows_quiet`) folds the tile records'
# heads (maximum, valid, +inf and missing-mass counts, duplicate bias) in every warp itself, a
# tile a lane per turn, with warp reductions, instead of a thread a tile and two block
# reductions (four barriers). The two-per-SM builds and the exact pass keep the block's fold
# (at 64 registers the warp fold spilled 402 -> 878 B); nvdisasm here shows every other
# kernel's SASS equal to bc's (PTX 67ba1a64). A/B of the two (four rounds) on cells of at most
# 132 rows, then wf's five GPU test binaries beside the four sanitizers.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run6.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in */*.xz */tests/*.xz; do unxz $f & done; wait
chmod +x */sonic-bench wf/tests/* wf/run.sh
md5sum */sonic-bench wf/tests/* wf/sampler_kernels.ptx > $W/md5.txt
echo "unpacked $(el)s"
cd $C/wf
CELLS="topk50_topp09_t07:f32:128256:1,topk50_topp09_t07:f32:128256:8,topk50_topp09_t07:f32:128256:64,topk50_topp09_t07:f32:151936:1,topk50_topp09_t07:f32:32000:1,topk50_topp09_t07:bf16:128256:1,random_full:f32:128256:1,random_full:f32:128256:64,flat_full:f32:128256:1,flat_full:f32:128256:64,flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,peaked_topp095:f32:128256:1,peaked_topp095:f32:128256:64,heterogeneous:f32:128256:1,heterogeneous:f32:128256:8,heterogeneous:f32:128256:64,crowded_topk50:f32:128256:1,crowded_topk50:f32:128256:64,alternating_topp095:f32:128256:64"
AB_SECONDS=60 timeout 100 bash ./run.sh ab $W/ab "$CELLS" 4 bc=../bc/sonic-bench wf=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_sampler tests/gpu_reliability tests/gpu_infra san/tests/
LEFT=$(( 300 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=8 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch|differ" $W/tests.log | head -20
wait; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
echo "elapsed $(el)"
