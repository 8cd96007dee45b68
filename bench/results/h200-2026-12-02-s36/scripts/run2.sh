#!/usr/bin/env bash
# Run 2 (session 36): m1 = f1 (main) + the mass scan's token weights between the warp
# reductions and the band updates (one basic block); sm = m1 + s1 (sample_tiles and
# sample_tiles_greedy logits in a cp.async ring), for reference. A/B of f1, m1, sm, five
# rounds; the grid on m1; then on m1 the five GPU test binaries beside a 25 s soak and
# compute-sanitizer (racecheck, memcheck, initcheck, synccheck over all five binaries).
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run2.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz; do unxz $f; done; chmod +x tests/* *-bench sonic-bench sonic-soak run.sh
md5sum *-bench sonic-bench sonic-soak tests/* > $W/md5.txt
echo "unpacked $(el)s"
CELLS="topk50_topp09_t07:f32:128256:1,topk50_topp09_t07:f32:128256:64,topk50_topp09_t07:f32:128256:1024,crowded_topk50:f32:128256:64,heterogeneous:f32:128256:1,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,heterogeneous:bf16:128256:256,random_full:f32:128256:1,random_full:f32:128256:64,random_full:f32:128256:256,random_full:bf16:128256:256,flat_full:f32:128256:64,flat_full:f32:128256:256,flat_full:f32:151936:256,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,peaked_topp095:f32:128256:256,greedy:f32:128256:1,greedy:f32:128256:256,greedy:f32:128256:1024"
AB_SECONDS=60 timeout 200 bash ./run.sh ab $W/ab "$CELLS" 5 f1=./f1-bench m1=./sonic-bench sm=./sm-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
timeout 100 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"; grep -A10 "Exact pass against" $W/grid/sonic-bench.md | tail -7
mkdir -p san/tests; cp run.sh san/; cp tests/* san/tests/
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=10 SANITIZE_SECONDS=360 timeout 370 bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
SP=$!
(timeout 40 bash ./run.sh soak --seconds 25 --out $W/soak > $W/soak.log 2>&1; echo "soak rc $?" >> $W/soak.log) &
KP=$!
timeout 330 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch" $W/tests.log | head -12
wait $KP; tail -3 $W/soak.log
wait $SP; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
echo "elapsed $(el)"
