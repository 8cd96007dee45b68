#!/usr/bin/env bash
# Session 61, call 2 (the device budget left after call 1 allowed one call): the test binaries
# call 1's 330 s bound cut off (gpu_topk, gpu_validation, gpu_verify of base; gpu_topk and
# gpu_verify of rc2 and pk), then a shortened A/B of base, rc2 and pk (12 of next-run-2.sh's
# cells, two rounds), then Nsight durations of heterogeneous f32 V = 128256 B = 64.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run2.tar.gz -C $W .' EXIT
. "$PWD/bench/candidates/carry-unpack.sh"
for b in base rc2 pk; do
  for t in gpu_topk gpu_verify $([ $b = base ] && echo gpu_validation); do
    (cd $C/$b && REQUIRE_GPU=1 timeout 170 ./tests/$t --test-threads=2 > $W/tests-$b-$t.log 2>&1; echo "$b $t rc $? $(el)s" >> $W/tests-$b-$t.log) &
  done
done
wait; for f in $W/tests-*.log; do tail -1 $f; grep -E "test result|FAILED|panicked" $f | head -6; done
CELLS="topk50_topp09_t07:f32:128256:1,topk50_topp09_t07:f32:128256:64,random_full:f32:128256:1,flat_topp095:f32:128256:64,flat_full:f32:128256:64,flat_topp095:f32:151936:256,flat_full:f32:151936:256,heterogeneous:f32:128256:8,verify_hetero:f32:128256:8,verify_hetero:f32:128256:32,verify_sampled:f32:128256:8,verify_accepted:f32:128256:8"
cd $C/base; AB_SECONDS=45 timeout 250 bash ./run.sh ab $W/ab "$CELLS" 2 base=$C/base/sonic-bench rc2=$C/rc2/sonic-bench pk=$C/pk/sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
timeout 80 bash ./run.sh profile heterogeneous:f32:128256:64 $W/profile > $W/profile-hetero.log 2>&1; echo "profile rc $? $(el)s"
rm -f $W/profile/*.ncu-rep; cat $W/profile/*-summary.txt
echo "elapsed $(el)"
