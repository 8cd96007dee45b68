#!/usr/bin/env bash
# Run 1 (session 37): e1 = main (s2) with warp rows' keys gathered by exact_finish from their
# band codes (exact::gather_coded_row); exact_gather_runs returns at once on such steps.
# A/B of s2 and e1, five rounds; Nsight summaries of flat top-p 0.95 at V 128256, B 64 and 256;
# then on e1 the five GPU test binaries beside memcheck, synccheck, racecheck and initcheck
# over gpu_sampler, gpu_reliability and gpu_verify.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run1.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz; do unxz $f; done; chmod +x tests/* *-bench sonic-bench run.sh
md5sum *-bench sonic-bench tests/* > $W/md5.txt
echo "unpacked $(el)s"
CELLS="flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:64,flat_topp095:f32:151936:256,flat_full:f32:128256:256,flat_full:f32:151936:256,peaked_topp095:f32:128256:64,peaked_topp095:f32:128256:256,alternating_topp095:f32:128256:64,flat_topp095:f32:128256:1,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,heterogeneous:bf16:151936:256,heterogeneous:f32:128256:1024"
AB_SECONDS=60 timeout 100 bash ./run.sh ab $W/ab "$CELLS" 5 s2=./s2-bench e1=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
for cell in flat_topp095:f32:128256:256 flat_topp095:f32:128256:64; do
  timeout 50 bash ./run.sh profile $cell $W/profile > $W/profile-$cell.log 2>&1; echo "profile $cell rc $? $(el)s"; grep -E "^  [a-z_]+ \(|Duration" $W/profile-$cell.log | paste - - | awk '{print $1, $(NF)}' | head -12
done
rm -f $W/profile/*.ncu-rep
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_sampler tests/gpu_reliability tests/gpu_verify san/tests/
(SANITIZE_TOOLS="racecheck memcheck synccheck initcheck" SANITIZE_JOBS=12 SANITIZE_SECONDS=280 timeout 290 bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
SP=$!
timeout 290 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch" $W/tests.log | head -12
wait $SP; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
echo "elapsed $(el)"
