#!/usr/bin/env bash
# Run 2 (session 21): where the exact pass's time goes. Nsight summaries of flat top-p 0.95
# steps at V = 128256, B = 1, 64 and 256; source counters of exact_finish and exact_bins at
# B = 64; the exact-pass cells with the new fast-path cell (flat_full), on vm's PTX.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run2.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
gunzip -f sonic-bench.gz; chmod +x sonic-bench run.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
CELLS=$(for v in 128256 151936; do for b in 1 64 256; do for w in peaked_topp095 flat_topp095 flat_full; do printf "%s:f32:%s:%s," $w $v $b; done; done; done)
timeout 150 ./sonic-bench --only "${CELLS%,}" --out $W/exact-cells > $W/exact-cells.log 2>&1; echo "cells rc $? $(( $(date +%s) - START ))s"
sed -n '/## Exact pass against/,$p' $W/exact-cells/sonic-bench.md
for cell in flat_topp095:f32:128256:1 flat_topp095:f32:128256:64 flat_topp095:f32:128256:256; do
  timeout 100 bash ./run.sh profile $cell $W/profile > $W/profile-$(echo $cell | tr ':' '-').log 2>&1; echo "profile $cell rc $? $(( $(date +%s) - START ))s"
  grep -E "^  [a-z_]+ \(|Duration" $W/profile/$(echo $cell | tr ':' '-')-summary.txt | paste - - | awk '{print $1, $(NF-1), $NF}'
done
rm -f $W/profile/*.ncu-rep
for k in exact_finish exact_bins exact_gather exact_histogram; do
  NCU_EXTRA="--warp-sampling-interval 0" timeout 100 bash ./run.sh profile-source flat_topp095:f32:128256:64 $k $W/source > $W/source-$k.log 2>&1; echo "source $k rc $? $(( $(date +%s) - START ))s"; tail -3 $W/source-$k.log
done
echo "elapsed $(( $(date +%s) - START ))"
