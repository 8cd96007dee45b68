#!/usr/bin/env bash
# Run 6 (session 32): h1 = f8 with exact_histogram_runs' band adds unpredicated (a token
# outside the band adds zero; ptxas had made each predicated add a branch region); h2 = h1 with
# exact_gather_runs staging a round's keys in shared memory and reserving their run of the list
# once an item. On h2: compute-sanitizer (memcheck, racecheck, synccheck, initcheck over
# gpu_sampler and gpu_reliability) beside the five GPU test binaries; then, alone: A/B of f8,
# h1 and h2, three rounds; a 30 s soak; the whole grid on h2 and on h1.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run6.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz; do unxz $f; done; chmod +x tests/* *-bench sonic-bench sonic-soak run.sh
md5sum *-bench sonic-bench sonic-soak tests/* > $W/md5.txt
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_sampler tests/gpu_reliability san/tests/
(SANITIZE_TOOLS="memcheck racecheck synccheck initcheck" SANITIZE_SECONDS=230 timeout 240 bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
SP=$!
timeout 230 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch" $W/tests.log | head -12
wait $SP; echo "sanitize $(tail -1 $W/sanitize.log) $(( $(date +%s) - START ))s"; cat $W/sanitizer/summary.txt
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:64,flat_topp095:f32:151936:256,peaked_topp095:f32:128256:64,peaked_topp095:f32:128256:256,alternating_topp095:f32:128256:64,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,flat_full:f32:128256:64,random_full:f32:128256:256"
AB_SECONDS=60 timeout 170 bash ./run.sh ab $W/ab "$CELLS" 3 f8=./base-bench h1=./h1-bench h2=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
timeout 45 bash ./run.sh soak --seconds 30 --out $W/soak > $W/soak.log 2>&1; echo "soak rc $? $(( $(date +%s) - START ))s"; tail -2 $W/soak.log
timeout 70 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(( $(date +%s) - START ))s"; grep -A10 "Exact pass against" $W/grid/sonic-bench.md | tail -8
cp h1-bench sonic-bench; timeout 70 bash ./run.sh bench --out $W/grid-h1 > $W/grid-h1.log 2>&1; echo "grid h1 rc $? $(( $(date +%s) - START ))s"; grep -A10 "Exact pass against" $W/grid-h1/sonic-bench.md | tail -8
echo "elapsed $(( $(date +%s) - START ))"
