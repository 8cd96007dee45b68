#!/usr/bin/env bash
# Run 1 (session 38): h1 = main (s2) with exact_histogram_runs streaming warp rows' logits
# through a cp.async ring in shared memory, three rounds ahead (was: one round in registers and
# an L2 prefetch of the next). A/B of s2 and h1, five rounds; Nsight summaries of flat top-p
# 0.95 at V 128256, B 64 and 256; then on h1 the five GPU test binaries beside racecheck,
# memcheck, synccheck and initcheck over gpu_sampler and gpu_reliability.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run1.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz; do unxz $f; done; chmod +x tests/* *-bench sonic-bench run.sh
md5sum *-bench sonic-bench tests/* > $W/md5.txt
echo "unpacked $(el)s"
CELLS="flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:64,flat_topp095:f32:151936:256,flat_topp095:bf16:128256:256,flat_full:f32:128256:256,peaked_topp095:f32:128256:256,alternating_topp095:f32:128256:64,flat_topp095:f32:128256:1,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256"
AB_SECONDS=80 timeout 200 bash ./run.sh ab $W/ab "$CELLS" 5 s2=./s2-bench h1=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
for cell in flat_topp095:f32:128256:256 flat_topp095:f32:128256:64; do
  timeout 50 bash ./run.sh profile $cell $W/profile > $W/profile-$cell.log 2>&1; echo "profile $cell rc $? $(el)s"; grep -E "^  [a-z_]+ \(|Duration" $W/profile-$cell.log | paste - - | awk '{print $1, $(NF)}' | head -12
done
rm -f $W/profile/*.ncu-rep
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_sampler tests/gpu_reliability san/tests/
(SANITIZE_TOOLS="racecheck memcheck synccheck initcheck" SANITIZE_JOBS=8 SANITIZE_SECONDS=260 timeout 270 bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
SP=$!
timeout 270 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch" $W/tests.log | head -12
wait $SP; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
echo "elapsed $(el)"
