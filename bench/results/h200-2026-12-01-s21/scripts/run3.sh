#!/usr/bin/env bash
# Run 3 (session 21): v2 (b95b2aa: exact_histogram asks L2 for its next item, flushes only its
# tile's bin range, reaches_floor; exact_gather asks for its second item) under every GPU test;
# A/B of base (0557735, vm's PTX) and v2, two rounds, alternating; Nsight summary of a flat
# top-p B = 256 step on v2.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run3.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in tests/*.gz *.gz; do gunzip -f $f; done; chmod +x tests/* *-bench run.sh; cp v2-bench sonic-bench
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
timeout 230 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "FAILED|panicked|mismatch|differ" $W/tests.log | head -12
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:256,peaked_topp095:f32:128256:1,peaked_topp095:f32:128256:256,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,heterogeneous:f32:128256:1024,heterogeneous:f32:151936:256,random_full:f32:128256:256"
AB_SECONDS=80 timeout 340 bash ./run.sh ab $W/ab "$CELLS" 2 base=./base-bench v2=./v2-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
timeout 60 bash ./run.sh profile flat_topp095:f32:128256:256 $W/profile > $W/profile.log 2>&1; echo "profile rc $?"
grep -E "^  [a-z_]+ \(|Duration" $W/profile/*-summary.txt | paste - - | awk '{print $1, $(NF-1), $NF}'; rm -f $W/profile/*.ncu-rep
echo "elapsed $(( $(date +%s) - START ))"
