#!/usr/bin/env bash
# Session 61, call 7: `br`, main with `ExactPassOrder::ByRows` as the default (the exact
# pass's first launch overlapped with stage 2 from 64 rows up to one a SM; PTX unchanged,
# 3708d7b3), against run 4's `head` (FirstSerial). br's gpu_sampler at full size (its graph
# test has a 64-row ByRows case), then an A/B, three rounds: both builds at their defaults.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run7.tar.gz -C $W .' EXIT
. "$PWD/bench/candidates/carry-unpack.sh"
md5sum */sonic-bench */tests/* > $W/md5.txt
cd $C/br
REQUIRE_GPU=1 timeout 150 ./tests/gpu_sampler --test-threads=2 > $W/gpu_sampler.log 2>&1; echo "gpu_sampler rc $? $(el)s" >> $W/gpu_sampler.log
grep -E "test result|FAILED|panicked" $W/gpu_sampler.log; tail -1 $W/gpu_sampler.log
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_full:f32:128256:64,flat_topp095:f32:151936:64,flat_full:f32:151936:64,flat_topp095:f32:151936:256,peaked_topp095:f32:128256:64,heterogeneous:f32:128256:8,heterogeneous:f32:128256:64,heterogeneous:f32:151936:256"
AB_SECONDS=60 timeout 150 bash ./run.sh ab $W/ab "$CELLS" 3 head=$C/head/sonic-bench br=$C/br/sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
echo "elapsed $(el)"
