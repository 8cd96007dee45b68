#!/usr/bin/env bash
# Session 62, call 4. hy: main at 373eee1d (PTX 3708d7b3): rb2, but a read of one array (no row
# asked for log-probabilities) is one synchronous pageable copy again, the pinned path only when
# a read copies several. The four test binaries that read outputs most, at once; the device
# budget left no room for an A/B.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run4.tar.gz -C $W .' EXIT
. "$PWD/bench/candidates/carry-unpack.sh"
md5sum hy/tests/* > $W/md5.txt
cd $C/hy
for t in gpu_sampler gpu_verify gpu_reliability gpu_validation; do
  (REQUIRE_GPU=1 timeout 100 ./tests/$t --test-threads=3 > $W/test-$t.log 2>&1; echo "$t rc $? $(el)s" >> $W/test-$t.log) &
done
wait
for f in $W/test-*.log; do grep -E "test result|FAILED|panicked" $f | head -6; tail -1 $f; done
echo "elapsed $(el)"
