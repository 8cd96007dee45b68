#!/usr/bin/env bash
# Run 2 (session 35): r1 = main (n6) with sample_tiles_mass' logits in a shared-memory ring of
# cp.async copies (three rounds in flight, no register ring). On r1: the five GPU test binaries
# beside compute-sanitizer (memcheck, synccheck, racecheck, initcheck over gpu_sampler,
# gpu_reliability; memcheck over gpu_verify); A/B of c0 (main) and r1, five rounds; source
# counters of sample_tiles_mass on flat top-p B = 256 and heterogeneous B = 256.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run2.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz; do unxz $f; done; chmod +x tests/* *-bench sonic-bench run.sh
md5sum *-bench sonic-bench tests/* > $W/md5.txt
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_sampler tests/gpu_reliability tests/gpu_verify san/tests/
(SANITIZE_TOOLS="memcheck synccheck racecheck initcheck" SANITIZE_JOBS=12 SANITIZE_SECONDS=300 timeout 310 bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
SP=$!
timeout 240 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch" $W/tests.log | head -12
CELLS="flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:256,flat_full:f32:128256:64,flat_full:f32:128256:256,random_full:f32:128256:1,random_full:f32:128256:64,random_full:f32:128256:256,random_full:bf16:128256:256,heterogeneous:f32:128256:1,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,heterogeneous:bf16:128256:256,peaked_topp095:f32:128256:256,topk50_topp09_t07:f32:128256:64,greedy:f32:128256:1"
AB_SECONDS=50 timeout 200 bash ./run.sh ab $W/ab "$CELLS" 5 c0=./c0-bench r1=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
for spec in flat_topp095:f32:128256:256/sample_tiles_mass heterogeneous:f32:128256:256/sample_tiles_mass; do
  [ $(el) -lt 420 ] || break
  cell=${spec%/*}; k=${spec#*/}
  timeout 60 bash ./run.sh profile-source $cell $k $W/source > $W/src-$k-$(echo $cell | tr ':' '-').log 2>&1; echo "source $cell $k rc $? $(el)s"; grep -E "Duration|Warp Cycles" $W/src-$k-$(echo $cell | tr ':' '-').log
done
wait $SP; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
echo "elapsed $(el)"
