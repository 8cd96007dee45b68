#!/usr/bin/env bash
# Run 5 (session 30): v10c = stage 1's round loop for plain rows three rounds a pass, each
# round's logits in a slot of their own (no ring rotated by moves, which waited on the load
# just issued); v10 = the same for greedy rows alone (top-k rows keep the rotated ring).
# The five GPU test binaries on v10c; A/B of base (main, v8), v10 and v10c, three rounds;
# source counters of greedy B 64 on v10c.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run5.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz; do unxz $f; done; chmod +x tests/* *-bench sonic-bench run.sh
md5sum *-bench sonic-bench tests/* > $W/md5.txt
timeout 240 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch" $W/tests.log | head -20
CELLS="greedy:f32:128256:1,greedy:f32:128256:8,greedy:f32:128256:64,greedy:f32:128256:256,greedy:f32:128256:1024,greedy:f32:151936:64,greedy:bf16:128256:256,topk50_topp09_t07:f32:128256:1,topk50_topp09_t07:f32:128256:64,topk50_topp09_t07:f32:128256:256,topk50_topp09_t07:f32:151936:1024,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,crowded_topk50:f32:128256:64,topk50_topp09_t07:bf16:151936:256,random_full:f32:128256:64"
AB_SECONDS=80 timeout 300 bash ./run.sh ab $W/ab "$CELLS" 3 base=./base-bench v10=./v10-bench v10c=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
timeout 60 bash ./run.sh profile-source greedy:f32:128256:64 sample_tiles_greedy $W/source > $W/source-greedy-64.log 2>&1; echo "source rc $? $(( $(date +%s) - START ))s"; head -3 $W/source-greedy-64.log
for cell in greedy:f32:128256:64 topk50_topp09_t07:f32:128256:256; do
  timeout 60 bash ./run.sh profile $cell $W/profile > $W/profile-$(echo $cell | tr ':' '-').log 2>&1; echo "profile $cell rc $? $(( $(date +%s) - START ))s"
done
rm -f $W/profile/*.ncu-rep
grep -hE "^  [a-z_]+ \(|Duration|DRAM Throughput" $W/profile/*summary*.txt
echo "elapsed $(( $(date +%s) - START ))"
