#!/usr/bin/env bash
# Run 5 (session 27): Nsight Compute summaries of the final kernels (10dffeb; a530c03 bench, md5
# f6e7a852...) for crowded_topk50 and topk50_topp09_t07 at V 128256, B 1: where the crowded
# row's extra time goes.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run5.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
gunzip -f sonic-bench.gz; chmod +x sonic-bench run.sh
md5sum sonic-bench > $W/md5.txt
for cell in crowded_topk50:f32:128256:1 topk50_topp09_t07:f32:128256:1; do
  timeout 200 bash ./run.sh profile $cell $W/profile > $W/profile-${cell%%:*}.log 2>&1; echo "profile $cell rc $? $(( $(date +%s) - START ))s"
done
for f in $W/profile/*summary*.txt; do echo "== $f"; grep -E '^  [a-z_]+ \(|Duration' $f; done
echo "elapsed $(( $(date +%s) - START ))"
