#!/usr/bin/env bash
# Run 1 (session 33): c1 = h1 with band codes: exact_histogram_runs writes each warp-row token's
# sub-bin of the boundary band (a byte; 0xff outside it), and exact_gather_runs reads the codes
# instead of the logits, then the logits of the boundary sub-bin's tokens alone. On c1: the five
# GPU test binaries beside compute-sanitizer (memcheck, synccheck, racecheck over gpu_sampler;
# memcheck over gpu_reliability); then A/B of h1 and c1, three rounds; Nsight summaries of flat
# top-p 0.95 at V 128256, B 64 and 256.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run1.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz; do unxz $f; done; chmod +x tests/* *-bench sonic-bench sonic-soak run.sh
md5sum *-bench sonic-bench sonic-soak tests/* > $W/md5.txt
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_sampler tests/gpu_reliability san/tests/
(SANITIZE_TOOLS="memcheck synccheck racecheck" SANITIZE_SECONDS=220 timeout 230 bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
SP=$!
timeout 220 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch" $W/tests.log | head -12
wait $SP; echo "sanitize $(tail -1 $W/sanitize.log) $(( $(date +%s) - START ))s"; cat $W/sanitizer/summary.txt
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:64,flat_topp095:f32:151936:256,flat_topp095:bf16:128256:64,peaked_topp095:f32:128256:64,peaked_topp095:f32:128256:256,alternating_topp095:f32:128256:64,heterogeneous:f32:128256:64,flat_full:f32:128256:64,flat_full:f32:128256:256"
AB_SECONDS=60 timeout 170 bash ./run.sh ab $W/ab "$CELLS" 3 h1=./base-bench c1=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
for cell in flat_topp095:f32:128256:64 flat_topp095:f32:128256:256; do
  timeout 50 bash ./run.sh profile $cell $W/profile > $W/profile-$cell.log 2>&1; echo "profile $cell rc $? $(( $(date +%s) - START ))s"; grep -E "^  [a-z_]+ \(|Duration" $W/profile-$cell.log | paste - - | awk '{print $1, $(NF)}' | head -8
done
rm -f $W/profile/*.ncu-rep
echo "elapsed $(( $(date +%s) - START ))"
