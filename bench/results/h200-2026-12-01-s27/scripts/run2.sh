#!/usr/bin/env bash
# Run 2 (session 27): the sampler and reliability GPU tests on new2 (10dffeb: the crowded-tile
# merge out of line, top-k up to 128 only); A/B of base (f0fb477), new1 (1c18366) and new2;
# the grid of new2; memcheck and racecheck of the crowded-rows test with the time left.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run2.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in tests/*.gz *.gz; do gunzip -f $f; done; chmod +x tests/* *-bench sonic-bench run.sh
md5sum *-bench sonic-bench tests/* > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
timeout 250 bash ./run.sh > $W/tests.log 2>&1; trc=$?; echo "tests rc $trc $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "FAILED|panicked|mismatch|differ" $W/tests.log | head -20
CELLS="crowded_topk50:f32:128256:1,crowded_topk50:f32:128256:64,crowded_topk50:f32:128256:256,crowded_topk50:f32:151936:64,topk50_topp09_t07:f32:128256:1,topk50_topp09_t07:f32:128256:64,topk50_topp09_t07:f32:128256:256,topk50_topp09_t07:bf16:151936:256,heterogeneous:f32:128256:64"
AB_SECONDS=80 timeout 200 bash ./run.sh ab $W/ab "$CELLS" 2 base=./base-bench new1=./new1-bench new2=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
timeout 120 bash ./run.sh bench --out $W/grid > $W/bench-stdout.log 2>&1; echo "bench rc $? $(( $(date +%s) - START ))s"; grep -E "crowded|ceilings" $W/bench-stdout.log | head -8
left=$(( 570 - ($(date +%s) - START) )); echo "sanitizer budget $left s"
export SONIC_SANITIZE=1
for tool in memcheck racecheck; do
  left=$(( 570 - ($(date +%s) - START) )); [ $left -gt 20 ] || break
  timeout $left compute-sanitizer --tool $tool --error-exitcode 1 ./tests/gpu_sampler gpu_crowded_top_k_rows_are_decided_in_stage_two --test-threads=1 > $W/$tool-crowded.log 2>&1; echo "$tool rc $? $(( $(date +%s) - START ))s"; grep -E "SUMMARY|test result" $W/$tool-crowded.log
done
echo "elapsed $(( $(date +%s) - START ))"
