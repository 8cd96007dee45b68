#!/usr/bin/env bash
# Run 1 (session 18): where a small batch's step goes. Nsight summaries of B = 1 and 64 cells,
# source counters of sample_rows and sample_tiles for one top-k 50 + top-p 0.9 row.
W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run1.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b; gunzip -f *.gz; chmod +x sonic-bench run.sh
for cell in topk50_topp09_t07:f32:128256:1 random_full:f32:128256:1 heterogeneous:f32:128256:1 topk50_topp09_t07:f32:128256:64 random_full:f32:128256:64; do
  timeout 100 ./run.sh profile $cell $W/prof > $W/prof-$cell.log 2>&1; echo "prof $cell rc $?"
done
cat $W/prof/*-summary.txt; rm -f $W/prof/*.ncu-rep $W/prof/*-details.txt
for k in sample_rows sample_tiles; do
  timeout 120 ./run.sh profile-source topk50_topp09_t07:f32:128256:1 $k $W/src > $W/src-$k.log 2>&1; echo "src $k rc $?"; cat $W/src-$k.log | tail -5
done
timeout 120 ./run.sh profile-source topk50_topp09_t07:f32:128256:64 sample_rows $W/src > $W/src-64.log 2>&1; echo "src64 rc $?"
