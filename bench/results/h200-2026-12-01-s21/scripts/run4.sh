#!/usr/bin/env bash
# Run 4 (session 21): A/B of base (0557735, vm's PTX) and v3 (aeeebf2: exact_histogram with
# plain metadata loads, the list two items ahead, the next item's logits asked of L2, the bin
# range flush), two rounds; Nsight summary of a flat top-p B = 256 step and source counters of
# v3's exact_histogram at B = 64.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run4.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in *.gz; do gunzip -f $f; done; chmod +x *-bench run.sh; cp v3-bench sonic-bench
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:256,peaked_topp095:f32:128256:256,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,heterogeneous:f32:128256:1024,random_full:f32:128256:256"
AB_SECONDS=80 timeout 300 bash ./run.sh ab $W/ab "$CELLS" 2 base=./base-bench v3=./v3-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
timeout 60 bash ./run.sh profile flat_topp095:f32:128256:256 $W/profile > $W/profile.log 2>&1; echo "profile rc $?"
grep -E "^  [a-z_]+ \(|Duration" $W/profile/*-summary.txt | paste - - | awk '{print $1, $(NF-1), $NF}'; rm -f $W/profile/*.ncu-rep
NCU_EXTRA="--warp-sampling-interval 0" timeout 100 bash ./run.sh profile-source flat_topp095:f32:128256:64 exact_histogram $W/source > $W/source.log 2>&1; echo "source rc $?"; tail -3 $W/source.log
echo "elapsed $(( $(date +%s) - START ))"
