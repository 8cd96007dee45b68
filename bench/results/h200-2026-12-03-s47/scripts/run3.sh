#!/usr/bin/env bash
# Run 3 (session 47), one call. Run 2's v5 passed the five test binaries, memcheck, initcheck
# and synccheck, but racecheck's process ended with an error (after the test's tokens matched)
# over gpu_sampler and gpu_reliability. Here: racecheck on gpu_sampler's smoke test for v4
# (slots from a shared count in sample_tiles only), v4b (v4 with lane 0's stores of the count
# as atomic exchanges) and v3 (no count: the warp prefix sum), each alone; the build to land is
# the first of v4, v4b, v3 whose smoke passes; then its five GPU test binaries
# beside the four sanitizers over gpu_sampler, gpu_reliability and gpu_infra, the grid, and
# FlashInfer's harness in the same call.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run3.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in v3/tests/*.xz v3/*.xz v4/tests/*.xz v4/*.xz v4b/tests/*.xz v4b/*.xz peers/*.xz; do unxz $f; done
chmod +x v3/tests/* v4/tests/* v4b/tests/* */sonic-bench */run.sh peers/flashinfer_peers
md5sum */sonic-bench v3/tests/* v4/tests/* v4b/tests/* peers/flashinfer_peers > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
mkdir -p $W/smoke
for v in v4 v4b v3; do
  SONIC_SANITIZE=1 timeout 60 compute-sanitizer --tool racecheck $v/tests/gpu_sampler --test-threads=1 --nocapture gpu_smoke_small_batch > $W/smoke/racecheck-$v.log 2>&1
  echo "racecheck smoke $v rc $? $(el)s"; tail -3 $W/smoke/racecheck-$v.log
done
X=v3
for v in v4b v4; do grep -q "RACECHECK SUMMARY: 0 hazards" $W/smoke/racecheck-$v.log && ! grep -q "Target application returned an error" $W/smoke/racecheck-$v.log && X=$v; done
echo "chosen $X" | tee $W/chosen.txt
cd $C/$X; mkdir -p peers; cp ../peers/flashinfer_peers peers/
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_sampler tests/gpu_reliability tests/gpu_infra san/tests/
LEFT=$(( 470 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=8 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
SP=$!
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch|differ" $W/tests.log | head -20
wait $SP; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
timeout 70 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"; grep -E "topk50_topp09_t07 \| f32 \| 128256" $W/grid/sonic-bench.md | head -6
timeout 50 bash ./run.sh flashinfer --out $W/grid/flashinfer-peers.json > $W/flashinfer.log 2>&1; echo "flashinfer rc $? $(el)s"; tail -1 $W/flashinfer.log
echo "elapsed $(el)"
