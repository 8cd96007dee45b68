#!/usr/bin/env bash
# Run 7 (session 19): where a heterogeneous verification call goes on the final build (vg):
# Nsight source counters of verify_rows and verify_draws at V = 128256, B = 8, and of
# verify_rows at B = 128 (one launch each).
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run7.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
gunzip -f vg-bench.gz; chmod +x vg-bench run.sh; cp vg-bench sonic-bench
for ck in verify_hetero:f32:128256:8:verify_rows verify_hetero:f32:128256:8:verify_draws verify_hetero:f32:128256:128:verify_rows; do
  cell=${ck%:*}; k=${ck##*:}
  timeout 70 bash ./run.sh profile-source $cell $k $W/src > $W/log-$k-${cell//:/-}.txt 2>&1; echo "src $ck rc $? $(( $(date +%s) - START ))s"; grep -E "Duration|Warp Cycles" $W/log-$k-${cell//:/-}.txt
done
echo "elapsed $(( $(date +%s) - START ))"
