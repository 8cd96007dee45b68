#!/usr/bin/env bash
# Run 3 (session 54), one call. base: session 53's landed build (7ae3cc4, PTX 95ca6c44). bs:
# stage 2 adds stage 1's tile band sums up per row band once (`summarize`, through the shared
# `fixed::row_band_of`), takes the row mass as 37 products that every warp sums itself (one
# barrier, not two), and leaves the sums in shared memory, where `boundary_band` finds a band-mode
# row's boundary band with no barrier (it added the sums up again, then a block scan and two
# reductions). A/B of the two (four rounds) on the exact pass's cells and their fast-path
# counterparts, mixed batches, untruncated rows and top-k (control); Nsight summaries of flat
# top-p 0.95 at B = 64 on both; then bs's five GPU test binaries beside the four sanitizers.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run3.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in */*.xz */tests/*.xz; do unxz $f & done; wait
chmod +x */sonic-bench bs/tests/* bs/run.sh
cp bs/run.sh base/
md5sum */sonic-bench bs/tests/* bs/sampler_kernels.ptx > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
cd $C/bs
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:1,flat_topp095:f32:151936:64,flat_topp095:f32:151936:256,flat_full:f32:128256:1,flat_full:f32:128256:64,flat_full:f32:128256:256,flat_full:f32:151936:1,flat_full:f32:151936:64,flat_full:f32:151936:256,flat_topp095:bf16:128256:256,peaked_topp095:f32:128256:1,peaked_topp095:f32:128256:64,peaked_topp095:f32:128256:256,heterogeneous:f32:128256:8,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,random_full:f32:128256:1,random_full:f32:128256:1024,alternating_topp095:f32:128256:64,topk50_topp09_t07:f32:128256:1,topk50_topp09_t07:f32:128256:256"
AB_SECONDS=60 timeout 260 bash ./run.sh ab $W/ab "$CELLS" 4 base=../base/sonic-bench bs=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
for b in base bs; do
  timeout 40 bash ../$b/run.sh profile flat_topp095:f32:128256:64 $W/nsight-$b > /dev/null 2>&1; echo "nsight $b rc $? $(el)s"
done
rm -f $W/nsight-*/*.ncu-rep
for f in $W/nsight-*/*-summary.txt; do echo "== $f"; grep -E "^  [a-z_]+ \(|Duration" $f | paste - - | awk '{print $1, $(NF)}'; done
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_sampler tests/gpu_reliability tests/gpu_infra san/tests/
LEFT=$(( 570 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=8 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch|differ" $W/tests.log | head -20
wait; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
echo "elapsed $(el)"
