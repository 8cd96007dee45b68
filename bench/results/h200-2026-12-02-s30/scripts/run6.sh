#!/usr/bin/env bash
# Run 6 (session 30): v11 = v10 written as one round macro for both ways (the kernels to land;
# its PTX differs from v10's in register numbering). The five GPU test binaries on v11;
# memcheck over them; A/B of base (main, v8), v10, v11 and v12 (an experiment: greedy rows six
# rounds ahead in six slots, the L2 prefetch twelve rounds ahead, sample_tiles_greedy at two
# blocks per SM), three rounds.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run6.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz; do unxz $f; done; chmod +x tests/* *-bench sonic-bench run.sh
md5sum *-bench sonic-bench tests/* > $W/md5.txt
timeout 240 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch" $W/tests.log | head -20
CELLS="greedy:f32:128256:1,greedy:f32:128256:8,greedy:f32:128256:64,greedy:f32:128256:256,greedy:f32:128256:1024,greedy:f32:151936:64,greedy:f32:262144:256,greedy:bf16:128256:256,topk50_topp09_t07:f32:128256:1,topk50_topp09_t07:f32:128256:64,topk50_topp09_t07:f32:128256:256,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,random_full:f32:128256:64"
AB_SECONDS=80 timeout 300 bash ./run.sh ab $W/ab "$CELLS" 3 base=./base-bench v10=./v10-bench v11=./sonic-bench v12=./v12-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
SANITIZE_TOOLS="memcheck" SANITIZE_SECONDS=170 timeout 190 bash ./run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "sanitize rc $? $(( $(date +%s) - START ))s"; cat $W/sanitizer/summary.txt
echo "elapsed $(( $(date +%s) - START ))"
