#!/usr/bin/env bash
# Run 1 (session 36): s1 = f1 (main) + sample_tiles / sample_tiles_greedy logits in a cp.async
# ring; sm = s1 + m1 (the mass scan's token weights between the warp reductions and the band
# updates, one basic block). A/B of f1, s1, sm, five rounds; then on sm the five GPU test
# binaries beside compute-sanitizer (memcheck, synccheck, racecheck, initcheck over
# gpu_sampler, gpu_reliability, gpu_verify); then source counters of sm's mass scan.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run1.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz; do unxz $f; done; chmod +x tests/* *-bench sonic-bench run.sh
md5sum *-bench sonic-bench tests/* > $W/md5.txt
echo "unpacked $(el)s"
CELLS="topk50_topp09_t07:f32:128256:1,topk50_topp09_t07:f32:128256:64,topk50_topp09_t07:f32:128256:1024,crowded_topk50:f32:128256:64,heterogeneous:f32:128256:1,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,heterogeneous:bf16:128256:256,random_full:f32:128256:64,random_full:f32:128256:256,random_full:bf16:128256:256,flat_full:f32:128256:256,flat_topp095:f32:128256:256,peaked_topp095:f32:128256:256,greedy:f32:128256:1,greedy:f32:128256:256,greedy:f32:128256:1024"
AB_SECONDS=60 timeout 250 bash ./run.sh ab $W/ab "$CELLS" 5 f1=./f1-bench s1=./s1-bench sm=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_sampler tests/gpu_reliability tests/gpu_verify san/tests/
(SANITIZE_TOOLS="memcheck synccheck racecheck initcheck" SANITIZE_JOBS=12 SANITIZE_SECONDS=240 timeout 250 bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
SP=$!
timeout 240 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch" $W/tests.log | head -12
wait $SP; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
for spec in flat_topp095:f32:128256:256/sample_tiles_mass; do
  [ $(el) -lt 540 ] || break
  cell=${spec%/*}; k=${spec#*/}
  timeout 50 bash ./run.sh profile-source $cell $k $W/source > $W/src-$k-$(echo $cell | tr ':' '-').log 2>&1; echo "source $cell $k rc $? $(el)s"; grep -E "Duration|Warp Cycles" $W/src-$k-$(echo $cell | tr ':' '-').log
done
echo "elapsed $(el)"
