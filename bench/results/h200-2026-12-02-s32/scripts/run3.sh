#!/usr/bin/env bash
# Run 3 (session 32): g1 = f8 with the exact pass's row chains trimmed: exact_finish asks for
# the tile masses and the generator's inputs with the gathered keys (before the sort), and
# exact_bins' band mode reads two tiles' sure sub-bins a turn. The five GPU test binaries;
# A/B of f8 and g1, three rounds; memcheck, racecheck and synccheck over gpu_sampler and
# gpu_reliability; a 45 s soak; the whole grid on g1.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run3.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz; do unxz $f; done; chmod +x tests/* *-bench sonic-bench sonic-soak run.sh
md5sum *-bench sonic-bench sonic-soak tests/* > $W/md5.txt
timeout 200 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch" $W/tests.log | head -12
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:64,flat_topp095:f32:151936:256,peaked_topp095:f32:128256:64,peaked_topp095:f32:128256:256,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,flat_full:f32:128256:64,random_full:f32:128256:256,topk50_topp09_t07:f32:128256:1"
AB_SECONDS=60 timeout 130 bash ./run.sh ab $W/ab "$CELLS" 3 f8=./base-bench g1=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
mkdir -p tests-sub; mv tests/gpu_infra tests/gpu_topk tests/gpu_verify tests-sub/
SANITIZE_TOOLS="memcheck racecheck synccheck" SANITIZE_SECONDS=140 timeout 150 bash ./run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "sanitize rc $? $(( $(date +%s) - START ))s"; cat $W/sanitizer/summary.txt
mv tests-sub/* tests/
timeout 70 bash ./run.sh soak --seconds 45 --out $W/soak > $W/soak.log 2>&1; echo "soak rc $? $(( $(date +%s) - START ))s"; tail -4 $W/soak.log
timeout 80 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(( $(date +%s) - START ))s"; grep -A10 "Exact pass against" $W/grid/sonic-bench.md | tail -8
echo "elapsed $(( $(date +%s) - START ))"
