#!/usr/bin/env bash
# Run 2 (session 49), one call. v2: run 1's pairs as a kernel of their own,
# sample_tiles_greedy_pairs (sample_tiles_greedy is session 48's SASS again: run 1's loop in it
# cost one-tile steps 0.4-2%), launched for bf16/f16 greedy grids of at least four times the
# resident warps (run 1: pairs lost at 1.3-1.5 waves of two-tile warps, gained at 2.6 and more).
# An A/B of base and v2 (four rounds); the five GPU test binaries on v2 beside memcheck and
# racecheck over the greedy-step test at full size (its pair cases; the sanitizer runs of run 1
# used reduced sizes, which have none); the grid and FlashInfer's harness on v2.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run2.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in v2/tests/*.xz v2/*.xz base/*.xz peers/*.xz; do unxz $f; done
chmod +x v2/tests/* */sonic-bench v2/run.sh peers/flashinfer_peers
md5sum */sonic-bench v2/tests/* v2/sampler_kernels.ptx peers/flashinfer_peers > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
cd $C/v2
CELLS="greedy:bf16:128256:1024,greedy:bf16:151936:1024,greedy:bf16:262144:256,greedy:bf16:262144:1024,greedy:bf16:128256:256,greedy:bf16:32000:1024,greedy:f32:128256:1024,greedy:f32:128256:256"
AB_SECONDS=60 timeout 200 bash ./run.sh ab $W/ab "$CELLS" 4 base=../base/sonic-bench v2=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
mkdir -p $W/san
for tool in memcheck racecheck; do
  (s=$(date +%s); timeout -k 15 330 compute-sanitizer --tool $tool --error-exitcode 1 ./tests/gpu_sampler --test-threads=1 gpu_greedy_steps_in_one_launch_equal_reference > $W/san/$tool-greedy-full.log 2>&1; echo "rc $? $(( $(date +%s) - s ))s" >> $W/san/$tool-greedy-full.log) &
done
timeout 330 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch|differ" $W/tests.log | head -20
wait; for t in memcheck racecheck; do echo "$t: $(grep -E 'SUMMARY|test result' $W/san/$t-greedy-full.log | tr '\n' ' ') $(tail -1 $W/san/$t-greedy-full.log)"; done; echo "sanitizers $(el)s"
timeout 70 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"; grep -E "greedy \| bf16 \| (128256|151936|262144) \| (256|1024)" $W/grid/sonic-bench.md | head -10
timeout 50 bash ./run.sh flashinfer --out $W/grid/flashinfer-peers.json > $W/flashinfer.log 2>&1; echo "flashinfer rc $? $(el)s"; tail -1 $W/flashinfer.log
echo "elapsed $(el)"
