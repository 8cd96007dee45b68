#!/usr/bin/env bash
# Run 1 (session 54), one call. base: session 53's landed build (7ae3cc4, PTX 95ca6c44). w1:
# stage 2's warp route (`warp_row`): in the builds of one block per SM, a random top-k row of
# k <= 128 without log-probabilities is decided by the block's first warp alone. First the new
# GPU test alone; then an A/B of the two builds (four rounds) on top-k 50 + top-p cells at
# B = 1..64 (the route) and B = 256 (the two-per-SM build: control), mixed batches, crowded
# rows (the route's fallback) and greedy (control); Nsight summaries of top-k 50 + top-p at
# B = 1 on both; then w1's five GPU test binaries beside the four sanitizers (reduced sizes).
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run1.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in */*.xz */tests/*.xz; do unxz $f & done; wait
chmod +x */sonic-bench w1/tests/* w1/run.sh
cp w1/run.sh base/
md5sum */sonic-bench w1/tests/* w1/sampler_kernels.ptx > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
cd $C/w1
T=gpu_top_k_rows_decided_by_one_warp_equal_reference
REQUIRE_GPU=1 timeout 90 ./tests/gpu_sampler --exact $T --nocapture --test-threads=1 > $W/$T.log 2>&1; echo "new test rc $? $(el)s"; grep -E "warp route|test result|differ|panicked|row [0-9]+ " $W/$T.log | head -20
CELLS="topk50_topp09_t07:f32:128256:1,topk50_topp09_t07:f32:128256:8,topk50_topp09_t07:f32:128256:64,topk50_topp09_t07:f32:128256:256,topk50_topp09_t07:f32:151936:1,topk50_topp09_t07:f32:151936:64,topk50_topp09_t07:f32:32000:1,topk50_topp09_t07:f32:262144:1,topk50_topp09_t07:f32:262144:64,topk50_topp09_t07:bf16:128256:1,topk50_topp09_t07:bf16:128256:64,heterogeneous:f32:128256:1,heterogeneous:f32:128256:8,heterogeneous:f32:128256:64,heterogeneous:f32:151936:64,crowded_topk50:f32:128256:1,crowded_topk50:f32:128256:64,greedy:f32:128256:1,random_full:f32:128256:1"
AB_SECONDS=60 timeout 240 bash ./run.sh ab $W/ab "$CELLS" 4 base=../base/sonic-bench w1=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
for b in base w1; do
  timeout 40 bash ../$b/run.sh profile topk50_topp09_t07:f32:128256:1 $W/nsight-$b > /dev/null 2>&1; echo "nsight $b rc $? $(el)s"
done
rm -f $W/nsight-*/*.ncu-rep
for f in $W/nsight-*/*-summary.txt; do echo "== $f"; grep -E "^  [a-z_]+ \(|Duration" $f | paste - - | awk '{print $1, $(NF)}'; done
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_sampler tests/gpu_reliability tests/gpu_infra san/tests/
LEFT=$(( 560 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=8 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch|differ" $W/tests.log | head -20
wait; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
echo "elapsed $(el)"
