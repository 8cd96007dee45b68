#!/usr/bin/env bash
# Run 3 (session 27): the other three GPU test binaries on the final kernels (10dffeb), then
# compute-sanitizer: memcheck over all five binaries, racecheck over gpu_sampler, then
# initcheck and synccheck with the time left (reduced sizes, SONIC_SANITIZE=1).
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run3.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
gunzip -f tests/*.gz; chmod +x tests/* run.sh
md5sum tests/* > $W/md5.txt
for t in gpu_infra gpu_verify gpu_topk; do
  REQUIRE_GPU=1 timeout 200 ./tests/$t --test-threads=1 > $W/test-$t.log 2>&1; echo "$t rc $? $(( $(date +%s) - START ))s"; grep -E "test result|panicked" $W/test-$t.log | head -3
done
left=$(( 560 - ($(date +%s) - START) )); echo "sanitizer budget $left s"
SANITIZE_TOOLS="racecheck memcheck" SANITIZE_SECONDS=$left timeout $((left + 20)) bash ./run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "sanitize rc $? $(( $(date +%s) - START ))s"
cat $W/sanitizer/summary.txt
echo "elapsed $(( $(date +%s) - START ))"
