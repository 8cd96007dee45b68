#!/usr/bin/env bash
# Run 5 (session 37): main's kernels (s2's PTX) with each row's token, status and exact-pass
# flag in one allocation, read with one copy. The five GPU test binaries beside memcheck and
# initcheck over gpu_sampler and gpu_reliability; then a 25 s soak alone.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run5.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz; do unxz $f; done; chmod +x tests/* sonic-soak run.sh
md5sum tests/* sonic-soak > $W/md5.txt
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_sampler tests/gpu_reliability san/tests/
(SANITIZE_TOOLS="memcheck initcheck" SANITIZE_JOBS=4 SANITIZE_SECONDS=200 timeout 210 bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
SP=$!
timeout 200 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch" $W/tests.log | head -12
wait $SP; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
timeout 40 bash ./run.sh soak --seconds 25 --out $W/soak > $W/soak.log 2>&1; echo "soak rc $? $(el)s"; tail -12 $W/soak.log
echo "elapsed $(el)"
