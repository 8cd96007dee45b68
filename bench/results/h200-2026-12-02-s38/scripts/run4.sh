#!/usr/bin/env bash
# Run 4 (session 38): l1 = f1 with the mass scan copying a lists-skipped row's logits under an
# L2 evict_last policy (cp.async ... L2::cache_hint), so that the exact pass's histogram finds
# them in L2; the histogram returns each line it reads to the normal priority (applypriority).
# A/B of s2, f1 and l1, five rounds. Then the winner W (l1 if it took flat top-p 0.95, V 128256,
# B 64 to at most 0.985 of f1's time, else f1): its five GPU test binaries beside memcheck over
# gpu_sampler and gpu_reliability, then the grid.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run4.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in ../l1/tests/*.xz ../f1/tests/*.xz ../l1/*.xz ../f1/*.xz *.xz; do unxz $f; done
chmod +x ../l1/tests/* ../f1/tests/* ../l1/sonic-bench ../f1/sonic-bench s2-bench run.sh
md5sum s2-bench ../l1/sonic-bench ../f1/sonic-bench ../l1/tests/* ../f1/tests/* > $W/md5.txt
echo "unpacked $(el)s"
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:64,flat_topp095:f32:151936:256,flat_topp095:bf16:128256:64,flat_full:f32:128256:64,flat_full:f32:128256:256,alternating_topp095:f32:128256:64,peaked_topp095:f32:128256:64,peaked_topp095:f32:128256:256,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,greedy:f32:128256:1024"
AB_SECONDS=90 timeout 300 bash ./run.sh ab $W/ab "$CELLS" 5 s2=./s2-bench f1=../f1/sonic-bench l1=../l1/sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
WIN=f1
R=$(awk -F'|' '$2 ~ /flat_topp095/ && $3 ~ /f32/ && $4 ~ /128256/ && $5 ~ / 64 / {print $7, $8}' $W/ab/ab-table.txt)
echo "flat top-p B 64 f1, l1 µs: $R"
if python3 -c "import sys; f,l=map(float,sys.argv[1:3]); sys.exit(0 if l <= 0.985*f else 1)" $R; then WIN=l1; fi
echo "winner $WIN" | tee $W/winner.txt
cp run.sh ../$WIN/; cd ../$WIN
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_sampler tests/gpu_reliability san/tests/
(SANITIZE_TOOLS="memcheck" SANITIZE_JOBS=2 SANITIZE_SECONDS=170 timeout 180 bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
SP=$!
timeout 220 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch" $W/tests.log | head -12
wait $SP; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
timeout 120 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"; grep -A10 "Exact pass against" $W/grid/sonic-bench.md | tail -7
echo "elapsed $(el)"
