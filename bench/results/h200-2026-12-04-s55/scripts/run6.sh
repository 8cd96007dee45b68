#!/usr/bin/env bash
# Run 6 (session 55), one call. elbt: the landed build (dc34c24, PTX 52a55b09). pf2: run 5's
# pf with the prefetch of the band-scale table by thread 0 alone and in stage 2 alone
# (`sample_rows_body`, the four builds); the exact pass and verification as elbt (their SASS
# the same size, their spills unchanged); `kth_key_floor`'s list positions computed. pf2's
# five GPU test binaries beside the four sanitizers; an A/B of the two (four rounds).
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run6.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in */*.xz */tests/*.xz; do unxz $f & done; wait
chmod +x */sonic-bench pf2/tests/* pf2/run.sh
md5sum */sonic-bench pf2/tests/* pf2/sampler_kernels.ptx > $W/md5.txt
echo "unpacked $(el)s"
cd $C/pf2
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_sampler tests/gpu_reliability tests/gpu_infra san/tests/
LEFT=$(( 270 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=8 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch|differ" $W/tests.log | head -20
wait; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:64,flat_full:f32:128256:1,flat_full:f32:128256:64,flat_full:f32:128256:256,peaked_topp095:f32:128256:1,heterogeneous:f32:128256:1,heterogeneous:f32:128256:8,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,topk50_topp09_t07:f32:128256:1,topk50_topp09_t07:f32:128256:64,topk50_topp09_t07:f32:128256:256,random_full:f32:128256:1,random_full:f32:32000:1,random_full:f32:128256:256,crowded_topk50:f32:128256:1,greedy:f32:128256:1"
AB_SECONDS=60 timeout 120 bash ./run.sh ab $W/ab "$CELLS" 4 elbt=../elbt/sonic-bench pf2=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
echo "elapsed $(el)"
