#!/usr/bin/env bash
# Run 1 (session 34): n5 = c1 with a cheaper exact-pass histogram: fixed::small_floor through
# add.rm.f32 (floor in two instructions, where -ceil(-v) took seven), exact_sub_bin's scale fused
# (fma(d, 128, 128), bit for bit (d + 1) * 128), and exact_histogram_runs' out-of-band tokens
# adding to per-lane spare bins with unselected values, their code the spare bin's number (>= SUB).
# n1 = c1 with the first two alone. On n5: the five GPU test binaries beside compute-sanitizer
# (memcheck, synccheck, racecheck, initcheck over gpu_sampler, gpu_reliability, gpu_verify); A/B
# of c1, n1 and n5, three rounds; Nsight summaries of flat top-p 0.95 at V 128256, B 64 and 256;
# the whole grid; a 30 s soak.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run1.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz; do unxz $f; done; chmod +x tests/* *-bench sonic-bench sonic-soak run.sh
md5sum *-bench sonic-bench sonic-soak tests/* > $W/md5.txt
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_sampler tests/gpu_reliability tests/gpu_verify san/tests/
(SANITIZE_TOOLS="memcheck synccheck racecheck initcheck" SANITIZE_JOBS=12 SANITIZE_SECONDS=235 timeout 245 bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
SP=$!
timeout 235 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch" $W/tests.log | head -12
wait $SP; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:64,flat_topp095:f32:151936:256,flat_topp095:bf16:128256:256,peaked_topp095:f32:128256:64,peaked_topp095:f32:128256:256,alternating_topp095:f32:128256:64,heterogeneous:f32:128256:64,flat_full:f32:128256:64,flat_full:f32:128256:256,flat_full:f32:151936:256"
AB_SECONDS=50 timeout 120 bash ./run.sh ab $W/ab "$CELLS" 3 c1=./c1-bench n1=./n1-bench n5=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
for cell in flat_topp095:f32:128256:64 flat_topp095:f32:128256:256; do
  [ $(el) -lt 470 ] || break
  timeout 45 bash ./run.sh profile $cell $W/profile > $W/profile-$cell.log 2>&1; echo "profile $cell rc $? $(el)s"; grep -E "^  [a-z_]+ \(|Duration" $W/profile-$cell.log | paste - - | awk '{print $1, $(NF)}' | head -8
done
rm -f $W/profile/*.ncu-rep
[ $(el) -lt 490 ] && { timeout 85 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"; grep -A10 "Exact pass against" $W/grid/sonic-bench.md | tail -8; }
[ $(el) -lt 545 ] && { timeout 40 bash ./run.sh soak --seconds 25 --out $W/soak > $W/soak.log 2>&1; echo "soak rc $? $(el)s"; tail -2 $W/soak.log; }
echo "elapsed $(el)"
