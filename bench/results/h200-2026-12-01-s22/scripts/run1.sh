#!/usr/bin/env bash
# Run 1 (session 22): band mode (3e27c37) under every GPU test; A/B of base (dc35e17, session
# 21's v5 PTX) and band, two rounds; Nsight summaries of flat top-p 0.95 B = 64 and 256 on band.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run1.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in tests/*.gz *.gz; do gunzip -f $f; done; chmod +x tests/* *-bench run.sh; cp band-bench sonic-bench
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
timeout 230 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "FAILED|panicked|mismatch|differ|band mode" $W/tests.log | head -20
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:256,flat_full:f32:128256:256,peaked_topp095:f32:128256:256,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,heterogeneous:f32:128256:1024,random_full:f32:128256:256,topk50_topp09_t07:f32:128256:1"
AB_SECONDS=80 timeout 200 bash ./run.sh ab $W/ab "$CELLS" 2 base=./base-bench band=./band-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
for cell in flat_topp095:f32:128256:64 flat_topp095:f32:128256:256; do
  left=$(( 560 - ($(date +%s) - START) )); [ $left -lt 60 ] && break
  timeout $((left - 10)) bash ./run.sh profile $cell $W/profile > $W/profile-$(echo $cell | tr ':' '-').log 2>&1; echo "profile $cell rc $? $(( $(date +%s) - START ))s"
  grep -E "^  [a-z_]+ \(|Duration" $W/profile/$(echo $cell | tr ':' '-')-summary.txt | paste - - | awk '{print $1, $(NF-1), $NF}'
done
rm -f $W/profile/*.ncu-rep
echo "elapsed $(( $(date +%s) - START ))"
