#!/usr/bin/env bash
# Run 2 (session 47), one call. On top of run 1's v2 (landed as 944e7ee, the base here): v3
# compares a plain top-k row's raw logits in each round (the plain prologue only for the
# tokens through the floor; the lane's least value by `min.NaN`); v4 is v3 with the buffer
# slots taken from a count in shared memory (`atom.shared.add`) instead of a warp prefix sum;
# v5 is v4 with the mass scan's slots taken the same way. A/B of base, v3, v4 and v5 on 15
# sampling cells (four rounds); Nsight durations and instruction counts of the stage-1 kernels
# (base and v5: top-k 50 + top-p, heterogeneous and peaked top-p 0.95 at B = 256); source
# counters of v5's sample_tiles at top-k 50 + top-p B = 256; the five GPU test binaries on v5
# beside the four sanitizers over gpu_sampler, gpu_reliability and gpu_infra.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run2.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz ../base/*.xz ../v3/*.xz ../v4/*.xz; do unxz $f; done
chmod +x tests/* sonic-bench run.sh ../base/sonic-bench ../v3/sonic-bench ../v4/sonic-bench
md5sum sonic-bench ../base/sonic-bench ../v3/sonic-bench ../v4/sonic-bench tests/* > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
CELLS="topk50_topp09_t07:f32:128256:1,topk50_topp09_t07:f32:128256:64,topk50_topp09_t07:f32:128256:256,topk50_topp09_t07:f32:128256:1024,topk50_topp09_t07:bf16:128256:256,topk50_topp09_t07:f32:151936:256,crowded_topk50:f32:128256:256,heterogeneous:f32:128256:8,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,heterogeneous:bf16:128256:64,random_full:f32:128256:256,flat_topp095:f32:128256:64,peaked_topp095:f32:128256:256,greedy:f32:128256:256"
AB_SECONDS=60 timeout 240 bash ./run.sh ab $W/ab "$CELLS" 4 base=../base/sonic-bench v3=../v3/sonic-bench v4=../v4/sonic-bench v5=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
mkdir -p $W/nsight
for b in base v5; do
  bin=./sonic-bench; [ $b = base ] && bin=../base/sonic-bench
  for cell in topk50_topp09_t07:f32:128256:256 heterogeneous:f32:128256:256 peaked_topp095:f32:128256:256; do
    name=$b-$(echo $cell | tr ':' '-')
    timeout 60 ncu --clock-control none --graph-profiling node -k "regex:^sample_tiles" --launch-skip 20 --launch-count 4 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --metrics smsp__inst_executed.sum \
      -f -o /tmp/$name $bin --only $cell --replays 20 --out /tmp/bench-$name > /dev/null 2>$W/nsight/$name.err
    echo "ncu $name rc $? $(el)s"
    ncu --import /tmp/$name.ncu-rep --page details > $W/nsight/$name-details.txt 2>&1
    grep -E "^  [a-z_]+ \(|Duration|DRAM Throughput|Achieved Occupancy|Warp Cycles Per Issued|Registers Per|smsp__inst_executed" $W/nsight/$name-details.txt > $W/nsight/$name-summary.txt
    grep -E "^  [a-z]|Duration|inst_executed" $W/nsight/$name-summary.txt
  done
done
mkdir -p $W/source
timeout 100 bash ./run.sh profile-source topk50_topp09_t07:f32:128256:256 sample_tiles $W/source > $W/source/topk50.log 2>&1; echo "source rc $? $(el)s"; tail -3 $W/source/topk50.log
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_sampler tests/gpu_reliability tests/gpu_infra san/tests/
LEFT=$(( 575 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=8 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
SP=$!
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch|differ" $W/tests.log | head -20
wait $SP; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
echo "elapsed $(el)"
