#!/usr/bin/env bash
# Run 3 (session 34): n7 = n6 with fixed::small_ceil through add.rp.f32 on the GPU (ceil off one
# sum's bits, three instructions where rounding to nearest and stepping up took seven): every
# kernel that weighs tokens changes (the mass scan, stage 2, the exact pass, verification). On
# n7: the five GPU test binaries beside compute-sanitizer (memcheck, synccheck, racecheck,
# initcheck over gpu_sampler, gpu_reliability, gpu_verify; memcheck over gpu_infra, gpu_topk);
# A/B of c1, n6 and n7, five rounds; Nsight summaries of flat top-p 0.95 at V 128256, B 64 and
# 256; the whole grid; a 25 s soak.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run3.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz; do unxz $f; done; chmod +x tests/* *-bench sonic-bench sonic-soak run.sh
md5sum *-bench sonic-bench sonic-soak tests/* > $W/md5.txt
mkdir -p san/tests san2/tests; cp run.sh san/; cp run.sh san2/; cp tests/gpu_sampler tests/gpu_reliability tests/gpu_verify san/tests/; cp tests/gpu_infra tests/gpu_topk san2/tests/
(SANITIZE_TOOLS="memcheck synccheck racecheck initcheck" SANITIZE_JOBS=12 SANITIZE_SECONDS=330 timeout 340 bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
SP=$!
(SANITIZE_TOOLS="memcheck" SANITIZE_JOBS=2 SANITIZE_SECONDS=200 timeout 210 bash ./san2/run.sh sanitize $W/sanitizer2 > $W/sanitize2.log 2>&1; echo "rc $?" >> $W/sanitize2.log) &
SP2=$!
timeout 300 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch" $W/tests.log | head -12
wait $SP2; echo "sanitize2 $(tail -1 $W/sanitize2.log) $(el)s"; cat $W/sanitizer2/summary.txt
wait $SP; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:64,flat_topp095:f32:151936:256,flat_topp095:bf16:128256:256,peaked_topp095:f32:128256:256,alternating_topp095:f32:128256:64,heterogeneous:f32:128256:1,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,flat_full:f32:128256:64,flat_full:f32:128256:256,flat_full:f32:151936:64,flat_full:f32:151936:256,random_full:f32:128256:1,random_full:f32:128256:64,random_full:bf16:128256:256,topk50_topp09_t07:f32:128256:1,topk50_topp09_t07:f32:128256:256,greedy:f32:128256:64,verify_hetero:f32:128256:32,verify_sampled:f32:128256:32"
AB_SECONDS=60 timeout 170 bash ./run.sh ab $W/ab "$CELLS" 5 c1=./c1-bench n6=./n6-bench n7=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
for cell in flat_topp095:f32:128256:64 flat_topp095:f32:128256:256; do
  [ $(el) -lt 480 ] || break
  timeout 45 bash ./run.sh profile $cell $W/profile > $W/profile-$cell.log 2>&1; echo "profile $cell rc $? $(el)s"; grep -E "^  [a-z_]+ \(|Duration" $W/profile-$cell.log | paste - - | awk '{print $1, $(NF)}' | head -8
done
rm -f $W/profile/*.ncu-rep
[ $(el) -lt 500 ] && { timeout 85 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"; grep -A10 "Exact pass against" $W/grid/sonic-bench.md | tail -7; }
[ $(el) -lt 550 ] && { timeout 40 bash ./run.sh soak --seconds 25 --out $W/soak > $W/soak.log 2>&1; echo "soak rc $? $(el)s"; tail -2 $W/soak.log; }
echo "elapsed $(el)"
