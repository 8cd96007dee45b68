#!/usr/bin/env bash
# Run 5 (session 47, review), one call. v6: the final build (v5b) with the count's resets as
# plain stores again, and a warp sync before lane 0's store after the merges (every lane's
# read of the count ordered before the write; v4/v5 had none there, and racecheck's process
# failed at exit). racecheck on gpu_sampler's smoke test; a two-round A/B of base (v5b) and v6
# on three cells; gpu_sampler, gpu_reliability and gpu_infra on v6 beside the four sanitizers
# over the same three.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run5.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in v6/tests/*.xz v6/*.xz base/*.xz; do unxz $f; done
chmod +x v6/tests/* */sonic-bench v6/run.sh
md5sum */sonic-bench v6/tests/* > $W/md5.txt
echo "unpacked $(el)s"
mkdir -p $W/smoke
SONIC_SANITIZE=1 timeout 60 compute-sanitizer --tool racecheck v6/tests/gpu_sampler --test-threads=1 --nocapture gpu_smoke_small_batch > $W/smoke/racecheck-v6.log 2>&1
echo "racecheck smoke v6 rc $? $(el)s"; tail -3 $W/smoke/racecheck-v6.log
cd $C/v6
CELLS="topk50_topp09_t07:f32:128256:256,peaked_topp095:f32:128256:256,heterogeneous:f32:128256:64"
AB_SECONDS=30 timeout 60 bash ./run.sh ab $W/ab "$CELLS" 2 base=../base/sonic-bench v6=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
mkdir -p san/tests; cp run.sh san/; cp tests/* san/tests/
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=8 SANITIZE_SECONDS=240 timeout 250 bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
SP=$!
timeout 200 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch|differ" $W/tests.log | head -10
wait $SP; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
echo "elapsed $(el)"
