#!/usr/bin/env bash
# Run 8 (session 37): the review's final HEAD (b1cac9d; s2's PTX): the row arrays' ranges in
# one helper (GpuSampler::row_array), tokens read as i32 bits in place. The five GPU test
# binaries beside memcheck over gpu_sampler and gpu_reliability.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run8.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz; do unxz $f; done; chmod +x tests/* run.sh
md5sum tests/* > $W/md5.txt
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_sampler tests/gpu_reliability san/tests/
(SANITIZE_TOOLS="memcheck" SANITIZE_JOBS=2 SANITIZE_SECONDS=150 timeout 160 bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
SP=$!
timeout 200 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch" $W/tests.log | head -12
wait $SP; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
echo "elapsed $(el)"
