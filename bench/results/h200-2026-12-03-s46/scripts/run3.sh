#!/usr/bin/env bash
# Run 3 (session 46), one call. Run 2's source counters: at top-k 50 + top-p B = 256,
# sample_tiles' plain candidate path let some token of a warp's round through the floor in 98%
# of rounds (about a hundred keys a tile for 32 places): its floor came from the three rounds
# loaded. v5: the floor from every round of the warp's part (a pre-pass asks L2 for the rounds,
# folds the lanes' two largest values, and the main pass reads the rounds again); v6: from the
# first eight rounds only. Both in sample_tiles and sample_tiles_ring. A/B of base (cdb5c2f),
# v5, v6 on 12 sampling cells (four rounds); Nsight of sample_tiles (base, v5) at top-k 50 +
# top-p B = 256 with the memory section; the five GPU test binaries on v5 beside the four
# sanitizers over gpu_sampler, gpu_reliability and gpu_infra.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run3.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz sonic-bench.xz ../base/*.xz ../v6/*.xz; do unxz $f; done
chmod +x tests/* sonic-bench run.sh ../base/sonic-bench ../v6/sonic-bench
md5sum sonic-bench ../base/sonic-bench ../v6/sonic-bench tests/* > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
CELLS="topk50_topp09_t07:f32:128256:1,topk50_topp09_t07:f32:128256:8,topk50_topp09_t07:f32:128256:64,topk50_topp09_t07:f32:128256:256,topk50_topp09_t07:f32:128256:1024,topk50_topp09_t07:bf16:128256:256,topk50_topp09_t07:f32:151936:256,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,crowded_topk50:f32:128256:256,greedy:f32:128256:256,random_full:f32:128256:256"
AB_SECONDS=50 timeout 230 bash ./run.sh ab $W/ab "$CELLS" 4 base=../base/sonic-bench v5=./sonic-bench v6=../v6/sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
mkdir -p $W/nsight
for b in base v5; do
  bin=./sonic-bench; [ $b = base ] && bin=../base/sonic-bench
  for cell in topk50_topp09_t07:f32:128256:256; do
    name=$b-$(echo $cell | tr ':' '-')
    timeout 50 ncu --clock-control none --graph-profiling node -k "regex:^sample_tiles" --launch-skip 30 --launch-count 2 \
      --section SpeedOfLight --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis \
      -f -o /tmp/$name $bin --only $cell --replays 20 --out /tmp/bench-$name > /dev/null 2>$W/nsight/$name.err
    echo "ncu $name rc $? $(el)s"
    ncu --import /tmp/$name.ncu-rep --page details > $W/nsight/$name-details.txt 2>&1
    grep -E "^  [a-z_]+ \(|Duration|DRAM Throughput|L2 Hit Rate|Achieved Occupancy|Warp Cycles Per Issued|Issue Slots Busy" $W/nsight/$name-details.txt > $W/nsight/$name-summary.txt
    cat $W/nsight/$name-summary.txt
  done
done
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_sampler tests/gpu_reliability tests/gpu_infra san/tests/
LEFT=$(( 560 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=8 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
SP=$!
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch|differ" $W/tests.log | head -20
wait $SP; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
echo "elapsed $(el)"
