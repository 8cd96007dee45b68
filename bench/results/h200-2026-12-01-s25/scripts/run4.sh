#!/usr/bin/env bash
# Run 4 (session 25): A/B of base (session 24's final), k3 (bada4f9, run 3's final) and k5 (k3
# with session 24's loop for sorts of up to 512 keys, the new sort for 513-1024), then every
# GPU test on k5 with the time left.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run4.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in tests/*.gz *.gz; do gunzip -f $f; done; chmod +x tests/* *-bench run.sh; cp k5-bench sonic-bench
md5sum *-bench tests/* > $W/md5.txt
CELLS="topk50_topp09_t07:f32:128256:1,topk50_topp09_t07:f32:128256:8,heterogeneous:f32:128256:64,peaked_topp095:f32:128256:64,flat_topp095:f32:128256:1"
AB_SECONDS=60 timeout 110 bash ./run.sh ab $W/ab "$CELLS" 2 base=./base-bench k3=./k3-bench k5=./k5-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
left=$(( 290 - ($(date +%s) - START) )); echo "tests budget $left s"
timeout $left bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "FAILED|panicked|mismatch|differ" $W/tests.log | head -20
echo "elapsed $(( $(date +%s) - START ))"
