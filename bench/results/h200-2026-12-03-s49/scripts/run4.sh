#!/usr/bin/env bash
# Run 4 (session 49), one call. v3f: v3's kernels (the landed PTX) with the host launching
# sample_tiles_greedy_pairs for f32 logits too (greedy_span's dtype test dropped), to measure
# f32 pairs in a kernel of their own (run 1's v1f was confounded by v1's changed one-tile
# kernel). An A/B of base, v3 and v3f on f32 greedy cells that pair, a bf16 one for reference;
# v3f's greedy-step test at full size with an f32 pair case (V = 262144, B = 256); Nsight of
# greedy bf16 B = 1024 on v3.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run4.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in v3f/tests/*.xz v3f/*.xz v3/*.xz base/*.xz; do unxz $f; done
chmod +x v3f/tests/* */sonic-bench v3/run.sh
md5sum */sonic-bench v3f/tests/* > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
cd $C/v3
CELLS="greedy:f32:128256:1024,greedy:f32:151936:1024,greedy:f32:262144:256,greedy:f32:262144:1024,greedy:bf16:128256:1024"
AB_SECONDS=60 timeout 150 bash ./run.sh ab $W/ab "$CELLS" 4 base=../base/sonic-bench v3=./sonic-bench v3f=../v3f/sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
timeout 60 bash ./run.sh profile greedy:bf16:128256:1024 $W/nsight > $W/nsight.log 2>&1; echo "nsight rc $? $(el)s"; grep -E "Duration|DRAM Through|Occupancy|Registers" $W/nsight.log | head; rm -f $W/nsight/*.ncu-rep
timeout 150 ../v3f/tests/gpu_sampler --test-threads=1 gpu_greedy_steps_in_one_launch_equal_reference > $W/v3f-greedy-test.log 2>&1; echo "rc $?" >> $W/v3f-greedy-test.log
grep -E "test result|mismatch|panicked|^rc" $W/v3f-greedy-test.log; echo "elapsed $(el)"
