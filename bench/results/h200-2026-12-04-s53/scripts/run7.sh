#!/usr/bin/env bash
# Run 7 (session 53), one call. n2f: the final binaries: run 5's kernels (PTX 95ca6c44, byte for
# byte), the host's test hook `GpuSampler::exact_gathered_keys_last_step` (with
# `exact_band_rows_last_step`, reading the split rows' job words through one helper), and the
# new GPU test `gpu_split_finish_of_few_and_many_gathered_keys_equal_reference`. The five GPU
# test binaries; beside them the new test alone under racecheck and memcheck (reduced sizes).
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run7.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in n2f/tests/*.xz; do unxz $f & done; wait
chmod +x n2f/tests/* n2f/run.sh
md5sum n2f/tests/* > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
cd $C/n2f
T=gpu_split_finish_of_few_and_many_gathered_keys_equal_reference
REQUIRE_GPU=1 timeout 120 ./tests/gpu_sampler $T --nocapture --test-threads=1 > $W/$T.log 2>&1; echo "new test rc $? $(el)s"; grep -E "gathered|test result|panicked" $W/$T.log | head -12
for tool in racecheck memcheck; do
  (SONIC_SANITIZE=1 REQUIRE_GPU=1 timeout 250 compute-sanitizer --tool $tool --error-exitcode 1 ./tests/gpu_sampler $T --test-threads=1 > $W/$tool-$T.log 2>&1; echo "rc $?" >> $W/$tool-$T.log) &
done
timeout 400 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch|differ" $W/tests.log | head -20
wait; for tool in racecheck memcheck; do echo "$tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' $W/$tool-$T.log | tr '\n' ' ') $(tail -1 $W/$tool-$T.log)"; done
echo "elapsed $(el)"
