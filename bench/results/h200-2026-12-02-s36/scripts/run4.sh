#!/usr/bin/env bash
# Run 4 (session 36): s2 = m1 (main) + sample_tiles_ring, sample_tiles with its logits in a
# cp.async ring, launched for one-wave grids only (abi::scan_ring). A/B of m1 and s2, five
# rounds (B = 256 and 1024 keep sample_tiles: controls); then on s2 the five GPU test binaries
# beside memcheck, synccheck, racecheck and initcheck over gpu_sampler, gpu_reliability and
# gpu_verify.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run4.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz; do unxz $f; done; chmod +x tests/* *-bench sonic-bench run.sh
md5sum *-bench sonic-bench tests/* > $W/md5.txt
echo "unpacked $(el)s"
CELLS="topk50_topp09_t07:f32:128256:1,topk50_topp09_t07:f32:128256:8,topk50_topp09_t07:f32:128256:64,topk50_topp09_t07:bf16:128256:64,topk50_topp09_t07:f32:151936:64,topk50_topp09_t07:f32:32000:64,topk50_topp09_t07:f32:128256:256,topk50_topp09_t07:f32:128256:1024,crowded_topk50:f32:128256:1,crowded_topk50:f32:128256:64,heterogeneous:f32:128256:1,heterogeneous:f32:128256:8,heterogeneous:f32:128256:64,heterogeneous:bf16:128256:64,heterogeneous:f32:128256:256,topk128:f32:128256:64,greedy:f32:128256:1,random_full:f32:128256:64"
AB_SECONDS=60 timeout 100 bash ./run.sh ab $W/ab "$CELLS" 5 m1=./m1-bench s2=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_sampler tests/gpu_reliability tests/gpu_verify san/tests/
(SANITIZE_TOOLS="racecheck memcheck synccheck initcheck" SANITIZE_JOBS=12 SANITIZE_SECONDS=280 timeout 290 bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
SP=$!
timeout 290 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch" $W/tests.log | head -12
wait $SP; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
echo "elapsed $(el)"
