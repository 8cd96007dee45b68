#!/usr/bin/env bash
# Session 61, call 3 (the machine still warm after call 2): base's Nsight durations of flat top-p
# 0.95 f32 V = 128256 B = 64 (the exact pass), and the full section set with SASS source counters
# of heterogeneous B = 64's two stage-1 kernels, which stream the logits at 12-15% of DRAM peak.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run3.tar.gz -C $W .' EXIT
. "$PWD/bench/candidates/carry-unpack.sh"
cd $C/base
timeout 80 bash ./run.sh profile flat_topp095:f32:128256:64 $W/profile > $W/profile-flat.log 2>&1; echo "profile rc $? $(el)s"
rm -f $W/profile/*.ncu-rep; cat $W/profile/*-summary.txt
for k in sample_tiles_ring sample_tiles_mass; do
  timeout 100 bash ./run.sh profile-source heterogeneous:f32:128256:64 $k $W/source > $W/source-$k.log 2>&1; echo "source $k rc $? $(el)s"; cat $W/source-$k.log
done
echo "elapsed $(el)"
