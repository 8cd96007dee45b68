#!/usr/bin/env bash
# Run 3 (session 49), one call. v3: v2 with a bar.warp.sync between the two tiles a featured
# row's warp scans in sample_tiles_greedy_pairs (run 2's racecheck over the full-size greedy
# test: the second tile's bias-map clear against the first tile's reads, 5 warnings). Racecheck
# and memcheck over that test at full size again, beside the five GPU test binaries, then the
# four sanitizers over gpu_sampler, gpu_reliability and gpu_infra (reduced sizes), all at once;
# a short A/B
# of v2 and v3 on the pair cells, base for reference; the grid and FlashInfer's harness on v3.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run3.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in v3/tests/*.xz v3/*.xz v2/*.xz base/*.xz peers/*.xz; do unxz $f; done
chmod +x v3/tests/* */sonic-bench v3/run.sh peers/flashinfer_peers
md5sum */sonic-bench v3/tests/* peers/flashinfer_peers > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
cd $C/v3
mkdir -p peers; cp ../peers/flashinfer_peers peers/
CELLS="greedy:bf16:128256:1024,greedy:bf16:151936:1024,greedy:bf16:262144:256,greedy:bf16:262144:1024"
AB_SECONDS=60 timeout 120 bash ./run.sh ab $W/ab "$CELLS" 3 base=../base/sonic-bench v2=../v2/sonic-bench v3=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
mkdir -p $W/san san/tests; cp run.sh san/; cp tests/gpu_sampler tests/gpu_reliability tests/gpu_infra san/tests/
LEFT=$(( 480 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=8 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
for tool in memcheck racecheck; do
  (s=$(date +%s); timeout -k 15 200 compute-sanitizer --tool $tool --error-exitcode 1 ./tests/gpu_sampler --test-threads=1 gpu_greedy_steps_in_one_launch_equal_reference > $W/san/$tool-greedy-full.log 2>&1; echo "rc $? $(( $(date +%s) - s ))s" >> $W/san/$tool-greedy-full.log) &
done
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch|differ" $W/tests.log | head -20
wait; for t in memcheck racecheck; do echo "$t: $(grep -E 'SUMMARY|test result|Warning|Error' $W/san/$t-greedy-full.log | head -4 | tr '\n' ' ') $(tail -1 $W/san/$t-greedy-full.log)"; done
echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
timeout 70 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"; grep -E "greedy \| bf16 \| (128256|151936|262144) \| (256|1024)" $W/grid/sonic-bench.md | head -10
timeout 50 bash ./run.sh flashinfer --out $W/grid/flashinfer-peers.json > $W/flashinfer.log 2>&1; echo "flashinfer rc $? $(el)s"; tail -1 $W/flashinfer.log
echo "elapsed $(el)"
