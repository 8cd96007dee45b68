#!/usr/bin/env bash
# Run 7 (session 52, review), one call. rev: the review's final binaries (PTX 4f03e67c, the
# landed kernels; the merge's two gathers through one helper, which left the PTX byte for byte
# the same; the spread test asserting busy steps). The five GPU test binaries; beside them the
# spread test alone under racecheck and memcheck (reduced sizes).
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run7.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in rev/tests/*.xz; do unxz $f & done; wait
chmod +x rev/tests/* rev/run.sh
md5sum rev/tests/* > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
cd $C/rev
T=gpu_merged_lists_of_every_spread_equal_reference
for tool in racecheck memcheck; do
  (SONIC_SANITIZE=1 REQUIRE_GPU=1 timeout 250 compute-sanitizer --tool $tool --error-exitcode 1 ./tests/gpu_sampler $T --test-threads=1 > $W/$tool-$T.log 2>&1; echo "rc $?" >> $W/$tool-$T.log) &
done
timeout 420 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch|differ" $W/tests.log | head -20
wait; for tool in racecheck memcheck; do echo "$tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' $W/$tool-$T.log | tr '\n' ' ') $(tail -1 $W/$tool-$T.log)"; done
echo "elapsed $(el)"
