#!/usr/bin/env bash
# Run 6 (session 38): v2 = v1 with the band histogram splitting frac_weight's bits into its two
# words without the subtraction (fixed::frac_weight_bits), and its whole-vector path tempering
# without the maximum with -inf. A/B of f1, v1 and v2, five rounds. The winner W: v2 if it took
# flat top-p 0.95 at V 151936, B 256 to at most 0.995 of v1's time, else v1 (whose tests ran in
# run 5). If v2: its five GPU test binaries beside memcheck over gpu_sampler and
# gpu_reliability. Then the grid on W.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run6.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in ../v2/tests/*.xz ../v2/*.xz ../v1/*.xz *.xz; do unxz $f; done
chmod +x ../v2/tests/* ../v2/sonic-bench ../v1/sonic-bench f1-bench run.sh
md5sum f1-bench ../v1/sonic-bench ../v2/sonic-bench ../v2/tests/* > $W/md5.txt
echo "unpacked $(el)s"
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:64,flat_topp095:f32:151936:256,flat_full:f32:128256:64,flat_full:f32:151936:256,alternating_topp095:f32:128256:64,peaked_topp095:f32:128256:256,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256"
AB_SECONDS=90 timeout 200 bash ./run.sh ab $W/ab "$CELLS" 5 f1=./f1-bench v1=../v1/sonic-bench v2=../v2/sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
WIN=v1
R=$(awk -F'|' '$2 ~ /flat_topp095/ && $3 ~ /f32/ && $4 ~ /151936/ && $5 ~ / 256 / {print $7, $8}' $W/ab/ab-table.txt)
echo "flat top-p V 151936 B 256 v1, v2 µs: $R"
if python3 -c "import sys; a,b=map(float,sys.argv[1:3]); sys.exit(0 if b <= 0.995*a else 1)" $R; then WIN=v2; fi
echo "winner $WIN" | tee $W/winner.txt
cp run.sh ../$WIN/; cd ../$WIN
if [ $WIN = v2 ]; then
  mkdir -p san/tests; cp run.sh san/; cp tests/gpu_sampler tests/gpu_reliability san/tests/
  (SANITIZE_TOOLS="memcheck" SANITIZE_JOBS=2 SANITIZE_SECONDS=170 timeout 180 bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
  SP=$!
  timeout 220 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch" $W/tests.log | head -12
  wait $SP; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
fi
timeout 120 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"; grep -A10 "Exact pass against" $W/grid/sonic-bench.md | tail -7
echo "elapsed $(el)"
