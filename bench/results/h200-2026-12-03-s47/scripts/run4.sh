#!/usr/bin/env bash
# Run 4 (session 47), one call. v5b: run 3's v4b (sample_tiles' buffer slots from a shared
# count, its stores atomic exchanges) with the mass scan's slots taken the same way (run 2's
# v5, whose plain stores of the count made racecheck's process fail at exit). racecheck on
# gpu_sampler's smoke test for v5b; an A/B of v4b and v5b on 7 sampling cells (four rounds);
# if the smoke passed, the five GPU test binaries on v5b beside the four sanitizers over
# gpu_sampler, gpu_reliability and gpu_infra, then the grid and FlashInfer's harness.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run4.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in v5b/tests/*.xz v5b/*.xz v4b/*.xz peers/*.xz; do unxz $f; done
chmod +x v5b/tests/* */sonic-bench v5b/run.sh peers/flashinfer_peers
md5sum */sonic-bench v5b/tests/* peers/flashinfer_peers > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
mkdir -p $W/smoke
SONIC_SANITIZE=1 timeout 60 compute-sanitizer --tool racecheck v5b/tests/gpu_sampler --test-threads=1 --nocapture gpu_smoke_small_batch > $W/smoke/racecheck-v5b.log 2>&1
echo "racecheck smoke v5b rc $? $(el)s"; tail -3 $W/smoke/racecheck-v5b.log
cd $C/v5b
CELLS="topk50_topp09_t07:f32:128256:256,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,heterogeneous:bf16:128256:64,random_full:f32:128256:256,flat_topp095:f32:128256:64,peaked_topp095:f32:128256:256"
AB_SECONDS=40 timeout 120 bash ./run.sh ab $W/ab "$CELLS" 4 v4b=../v4b/sonic-bench v5b=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
if grep -q "Target application returned an error" $W/smoke/racecheck-v5b.log || ! grep -q "RACECHECK SUMMARY: 0 hazards" $W/smoke/racecheck-v5b.log; then echo "smoke failed: no tests"; exit 0; fi
mkdir -p peers; cp ../peers/flashinfer_peers peers/
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_sampler tests/gpu_reliability tests/gpu_infra san/tests/
LEFT=$(( 420 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=8 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
SP=$!
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch|differ" $W/tests.log | head -20
wait $SP; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
timeout 70 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"; grep -E "heterogeneous \| f32 \| 128256" $W/grid/sonic-bench.md | head -6
timeout 50 bash ./run.sh flashinfer --out $W/grid/flashinfer-peers.json > $W/flashinfer.log 2>&1; echo "flashinfer rc $? $(el)s"; tail -1 $W/flashinfer.log
echo "elapsed $(el)"
