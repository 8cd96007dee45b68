#!/usr/bin/env bash
# Run 4 (session 35): f3 = f1 + sample_tiles' prefetch hints of f2 (sample_tiles_mass as in r1
# and f1). A/B of f1, f2, f3, five rounds; on f3 the five GPU test binaries (gpu_verify's
# repeated-token test now holds a peaked row's other values below the penalized token) beside
# initcheck over gpu_verify; the whole grid; a 25 s soak.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run4.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz; do unxz $f; done; chmod +x tests/* *-bench sonic-bench sonic-soak run.sh
md5sum *-bench sonic-bench sonic-soak tests/* > $W/md5.txt
CELLS="random_full:f32:128256:64,random_full:f32:128256:256,random_full:bf16:128256:256,flat_full:f32:128256:256,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,heterogeneous:bf16:128256:256,heterogeneous:f32:151936:256,topk50_topp09_t07:f32:128256:256,topk50_topp09_t07:f32:128256:1024,greedy:f32:128256:1"
AB_SECONDS=60 timeout 200 bash ./run.sh ab $W/ab "$CELLS" 5 f1=./f1-bench f2=./f2-bench f3=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_verify san/tests/
(SANITIZE_TOOLS="initcheck" SANITIZE_JOBS=1 SANITIZE_SECONDS=150 timeout 160 bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
SP=$!
timeout 250 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch" $W/tests.log | head -12
wait $SP; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
[ $(el) -lt 500 ] && { timeout 85 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"; grep -A10 "Exact pass against" $W/grid/sonic-bench.md | tail -7; }
[ $(el) -lt 560 ] && { timeout 35 bash ./run.sh soak --seconds 25 --out $W/soak > $W/soak.log 2>&1; echo "soak rc $? $(el)s"; tail -2 $W/soak.log; }
echo "elapsed $(el)"
