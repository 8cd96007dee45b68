#!/usr/bin/env bash
# Run 7 (session 32): the five GPU test binaries on h1, the build that lands (run 6 ran them on
# h2, which contains h1's change); memcheck and synccheck over gpu_sampler beside them.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run7.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz; do unxz $f; done; chmod +x tests/* run.sh
md5sum tests/* > $W/md5.txt
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_sampler san/tests/
(SANITIZE_TOOLS="memcheck synccheck" SANITIZE_SECONDS=150 timeout 160 bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
SP=$!
timeout 220 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch" $W/tests.log | head -12
wait $SP; echo "sanitize $(tail -1 $W/sanitize.log) $(( $(date +%s) - START ))s"; cat $W/sanitizer/summary.txt
echo "elapsed $(( $(date +%s) - START ))"
