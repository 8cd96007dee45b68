#!/usr/bin/env bash
# Session 61, call 4: one bundle, `head` (main with this session's commits: the landed kernels,
# PTX 3708d7b3, the device-bitmask test that always masks a row, and sonic-soak's device-side
# calls), carried as .carry/head/ (xz'd, as in run 1). Its library is the one runs 1 and 2
# tested; only gpu_sampler's test and sonic-soak changed. This call:
# 1. gpu_sampler at full size beside a 240 s soak (device bitmasks and device outputs mixed in);
# 2. the changed test under racecheck and memcheck at the reduced sizes where it failed;
# 3. source counters of exact_finish on flat top-p 0.95 f32 V = 128256 B = 64 (the exact
#    pass's largest kernel, run 3).
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run4.tar.gz -C $W .' EXIT
. "$PWD/bench/candidates/carry-unpack.sh"
chmod +x */sonic-soak
md5sum */sonic-bench */sonic-soak */tests/* > $W/md5.txt
cd $C/head
(timeout 280 ./sonic-soak --seconds 240 --out $W/soak > $W/soak.log 2>&1; echo "soak rc $? $(el)s" >> $W/soak.log) &
REQUIRE_GPU=1 timeout 270 ./tests/gpu_sampler --test-threads=2 > $W/gpu_sampler.log 2>&1; echo "gpu_sampler rc $? $(el)s" >> $W/gpu_sampler.log
wait
grep -E "test result|FAILED|panicked" $W/gpu_sampler.log; tail -1 $W/gpu_sampler.log
tail -32 $W/soak.log
for tool in racecheck memcheck; do
  SONIC_SANITIZE=1 REQUIRE_GPU=1 timeout 100 compute-sanitizer --tool $tool --error-exitcode 1 ./tests/gpu_sampler --test-threads=1 --nocapture gpu_device_bitmask_rows_equal_reference > $W/san-$tool.log 2>&1
  echo "$tool rc $? $(el)s"; grep -E "test result|SUMMARY|took their mask" $W/san-$tool.log
done
timeout 70 bash ./run.sh profile-source flat_topp095:f32:128256:64 exact_finish $W/source > $W/source.log 2>&1; echo "source rc $? $(el)s"; cat $W/source.log
echo "elapsed $(el)"
