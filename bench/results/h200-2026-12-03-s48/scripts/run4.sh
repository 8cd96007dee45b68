#!/usr/bin/env bash
# Run 4 (session 48), one short call on the landed build (v4), for the next choice: Nsight
# durations of every kernel of heterogeneous B = 256 steps in bf16 and f32, and source
# counters of sample_tiles_greedy at greedy bf16 B = 1024 and of sample_tiles_half at top-k
# 50 + top-p bf16 B = 1024.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run4.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" v4/sonic-bench.xz && rm v4/sonic-bench.xz
chmod +x v4/sonic-bench v4/run.sh; md5sum v4/sonic-bench > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
cd v4
for cell in heterogeneous:bf16:128256:256 heterogeneous:f32:128256:256; do
  timeout 90 bash ./run.sh profile $cell $W/nsight > $W/nsight-$cell.log 2>&1; echo "nsight $cell rc $? $(el)s"; grep -E "^  [a-z_]+ \(|Duration" $W/nsight-$cell.log
done
rm -f $W/nsight/*.ncu-rep
timeout 90 bash ./run.sh profile-source greedy:bf16:128256:1024 sample_tiles_greedy $W/source > $W/source-greedy.log 2>&1; echo "source greedy rc $? $(el)s"; tail -3 $W/source-greedy.log
timeout 90 bash ./run.sh profile-source topk50_topp09_t07:bf16:128256:1024 sample_tiles_half $W/source > $W/source-topk.log 2>&1; echo "source topk rc $? $(el)s"; tail -3 $W/source-topk.log
echo "elapsed $(el)"
