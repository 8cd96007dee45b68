#!/usr/bin/env bash
# Run 4 (session 27): the crowded-rows test with bias and bitmask rows (a530c03's test binary,
# 10dffeb's kernels) plainly and under memcheck; a 150 s soak whose steps are 15% crowded.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run4.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
gunzip -f tests/*.gz sonic-soak.gz; chmod +x tests/* sonic-soak run.sh
md5sum tests/* sonic-soak > $W/md5.txt
REQUIRE_GPU=1 timeout 150 ./tests/gpu_sampler gpu_crowded_top_k_rows_are_decided_in_stage_two --test-threads=1 > $W/test-crowded.log 2>&1; echo "crowded test rc $? $(( $(date +%s) - START ))s"; grep -E "test result|panicked" $W/test-crowded.log
SONIC_SANITIZE=1 timeout 120 compute-sanitizer --tool memcheck --error-exitcode 1 ./tests/gpu_sampler gpu_crowded_top_k_rows_are_decided_in_stage_two --test-threads=1 > $W/memcheck-crowded.log 2>&1; echo "memcheck rc $? $(( $(date +%s) - START ))s"; grep -E "SUMMARY|test result" $W/memcheck-crowded.log
timeout 220 bash ./run.sh soak --seconds 150 --out $W/soak > $W/soak.log 2>&1; echo "soak rc $? $(( $(date +%s) - START ))s"; tail -12 $W/soak.log
echo "elapsed $(( $(date +%s) - START ))"
