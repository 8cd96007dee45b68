#!/usr/bin/env bash
# Run 1 (session 27): the sampler and reliability GPU tests on the crowded-tile build (1c18366); the new crowded-rows
# test on the base build (f0fb477: the same tests and benchmark, session 26's stage 2), which
# must fail there; A/B of base and new over crowded and plain top-k cells.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run1.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in tests/*.gz *.gz $C/a/*.gz; do gunzip -f $f; done; chmod +x tests/* sonic-bench base-bench run.sh $C/a/*
md5sum sonic-bench base-bench tests/* $C/a/* > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
timeout 250 bash ./run.sh > $W/tests.log 2>&1; trc=$?; echo "tests rc $trc $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "FAILED|panicked|mismatch|differ" $W/tests.log | head -20
REQUIRE_GPU=1 timeout 120 $C/a/gpu_sampler_base gpu_crowded_top_k_rows_are_decided_in_stage_two --test-threads=1 > $W/base-crowded-test.log 2>&1; echo "base crowded test rc $? (must fail) $(( $(date +%s) - START ))s"; grep -E "panicked|left|right|test result" $W/base-crowded-test.log | head -6
CELLS="crowded_topk50:f32:128256:1,crowded_topk50:f32:128256:64,crowded_topk50:f32:128256:256,crowded_topk50:f32:151936:64,topk50_topp09_t07:f32:128256:1,topk50_topp09_t07:f32:128256:64,topk50_topp09_t07:f32:128256:256,topk50_topp09_t07:bf16:151936:256,heterogeneous:f32:128256:64"
left=$(( 560 - ($(date +%s) - START) )); echo "ab budget $left s"
AB_SECONDS=80 timeout $left bash ./run.sh ab $W/ab "$CELLS" 2 base=./base-bench new=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
grep -h "crowded_topk50" $W/ab/*-1.log | head -8
echo "elapsed $(( $(date +%s) - START ))"
