#!/usr/bin/env bash
# Run 3 (session 35): f1 = r1 (main's mass ring) + sample_tiles' branch-free candidate test;
# f2 = f1 + L2 prefetch hints for featured rows (penalty counts in both stage-1 kernels,
# logits of sample_tiles' featured candidate rows). On f2: the five GPU test binaries beside
# compute-sanitizer (memcheck, synccheck, racecheck, initcheck over gpu_sampler,
# gpu_reliability; memcheck over gpu_verify); A/B of r1, f1, f2, five rounds; Nsight
# summaries; the whole grid; a 25 s soak.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run3.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz; do unxz $f; done; chmod +x tests/* *-bench sonic-bench sonic-soak run.sh
md5sum *-bench sonic-bench sonic-soak tests/* > $W/md5.txt
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_sampler tests/gpu_reliability tests/gpu_verify san/tests/
(SANITIZE_TOOLS="memcheck synccheck racecheck initcheck" SANITIZE_JOBS=12 SANITIZE_SECONDS=300 timeout 310 bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
SP=$!
timeout 250 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch" $W/tests.log | head -12
wait $SP; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
CELLS="topk50_topp09_t07:f32:128256:1,topk50_topp09_t07:f32:128256:64,topk50_topp09_t07:f32:128256:256,topk50_topp09_t07:f32:128256:1024,topk50_topp09_t07:bf16:128256:256,crowded_topk50:f32:128256:64,heterogeneous:f32:128256:1,heterogeneous:f32:128256:8,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,heterogeneous:f32:151936:256,heterogeneous:bf16:128256:256,random_full:f32:128256:256,greedy:f32:128256:1,greedy:f32:128256:1024"
AB_SECONDS=60 timeout 240 bash ./run.sh ab $W/ab "$CELLS" 5 r1=./r1-bench f1=./f1-bench f2=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
for cell in heterogeneous:f32:128256:256 topk50_topp09_t07:f32:128256:1024; do
  [ $(el) -lt 470 ] || break
  timeout 40 bash ./run.sh profile $cell $W/profile > $W/profile-$cell.log 2>&1; echo "profile $cell rc $? $(el)s"; grep -E "^  [a-z_]+ \(|Duration" $W/profile-$cell.log | paste - - | awk '{print $1, $(NF)}' | head -8
done
rm -f $W/profile/*.ncu-rep
[ $(el) -lt 480 ] && { timeout 85 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"; grep -A10 "Exact pass against" $W/grid/sonic-bench.md | tail -7; }
[ $(el) -lt 560 ] && { timeout 35 bash ./run.sh soak --seconds 25 --out $W/soak > $W/soak.log 2>&1; echo "soak rc $? $(el)s"; tail -2 $W/soak.log; }
echo "elapsed $(el)"
