#!/usr/bin/env bash
# Run 5 (session 38): v1 = f1 (main) with exact_histogram_runs taking a plain f32 row's
# whole-vector items on a path of their own: the rounds' vector loads with no NaN fill, no
# dtype, vocab or feature tests a round, and the tempering without its `+ 0`. A/B of f1 and
# v1, five rounds; Nsight summaries on v1 at flat top-p V 128256, B 64 and 256; then on v1 the
# five GPU test binaries beside memcheck and racecheck over gpu_sampler and gpu_reliability.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run5.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz; do unxz $f; done; chmod +x tests/* *-bench sonic-bench run.sh
md5sum *-bench sonic-bench tests/* > $W/md5.txt
echo "unpacked $(el)s"
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:64,flat_topp095:f32:151936:256,flat_full:f32:128256:256,flat_full:f32:151936:256,alternating_topp095:f32:128256:64,peaked_topp095:f32:128256:256,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256"
AB_SECONDS=90 timeout 200 bash ./run.sh ab $W/ab "$CELLS" 5 f1=./f1-bench v1=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
for cell in flat_topp095:f32:128256:256 flat_topp095:f32:128256:64; do
  timeout 50 bash ./run.sh profile $cell $W/profile > $W/profile-${cell//:/-}.log 2>&1; echo "profile $cell rc $? $(el)s"; grep -E "^  [a-z_0-9]+ \(|Duration" $W/profile-${cell//:/-}.log | paste - - | awk '{print $1, $(NF)}' | head -12
done
rm -f $W/profile/*.ncu-rep
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_sampler tests/gpu_reliability san/tests/
(SANITIZE_TOOLS="memcheck racecheck" SANITIZE_JOBS=4 SANITIZE_SECONDS=230 timeout 240 bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
SP=$!
timeout 250 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch" $W/tests.log | head -12
wait $SP; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
echo "elapsed $(el)"
