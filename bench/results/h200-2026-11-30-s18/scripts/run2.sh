#!/usr/bin/env bash
# Run 2 (session 18): source counters at the finest PC-sampling interval (every 32 cycles) for
# one-row stage-2 and stage-1 kernels, to see where a lone row's latency goes.
W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run2.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b; gunzip -fv sonic-bench.gz; chmod +x sonic-bench run.sh
export NCU_EXTRA="--warp-sampling-interval 0"
for ck in topk50_topp09_t07:f32:128256:1:sample_rows random_full:f32:128256:1:sample_rows random_full:f32:128256:1:sample_tiles_mass topk50_topp09_t07:f32:128256:1:sample_tiles heterogeneous:f32:128256:1:sample_rows random_full:f32:128256:64:sample_rows; do
  cell=${ck%:*}; k=${ck##*:}
  timeout 100 bash ./run.sh profile-source $cell $k $W/src > $W/log-$k-${cell//:/-}.txt 2>&1; echo "src $ck rc $?"
done
