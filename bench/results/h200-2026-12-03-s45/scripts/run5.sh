#!/usr/bin/env bash
# Run 5 (session 45), one call, after the review. The final kernels (PTX md5 0ecb0a..., as run
# 2 tested) with the review's gpu_verify: gpu_verify_plain_rows_with_special_values now runs
# 96 requests (blocks alone) and 24 (groups in turn) beside 3 (one round) and asserts that
# every layout ran. gpu_verify beside racecheck, memcheck, initcheck and synccheck over it.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run5.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz; do unxz $f; done
chmod +x tests/* run.sh
md5sum tests/* > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_verify san/tests/
LEFT=$(( 300 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=4 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
SP=$!
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|differ|layout" $W/tests.log | head -20
wait $SP; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt; grep -h "layout" $W/sanitizer/*.log | head -4
echo "elapsed $(el)"
