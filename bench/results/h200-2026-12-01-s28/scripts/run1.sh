#!/usr/bin/env bash
# Run 1 (session 28): Nsight Compute summaries of session 27's final kernels (c537bc8 bench)
# for flat_topp095 at V 128256, B 64 and 256, and flat_full at B 256; source counters of
# exact_finish_two_per_sm and exact_histogram at flat_topp095 B 256: where the exact pass's
# time goes at the batch sizes where it misses 2x the fast path.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run1.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
gunzip -f sonic-bench.gz; chmod +x sonic-bench run.sh
md5sum sonic-bench > $W/md5.txt
for cell in flat_topp095:f32:128256:256 flat_topp095:f32:128256:64 flat_full:f32:128256:256; do
  timeout 150 bash ./run.sh profile $cell $W/profile > $W/profile-$(echo $cell | tr ':' '-').log 2>&1; echo "profile $cell rc $? $(( $(date +%s) - START ))s"
done
rm -f $W/profile/*.ncu-rep
for k in exact_finish_two_per_sm exact_histogram exact_gather; do
  timeout 120 bash ./run.sh profile-source flat_topp095:f32:128256:256 $k $W/source > $W/source-$k.log 2>&1; echo "source $k rc $? $(( $(date +%s) - START ))s"
done
for f in $W/profile/*summary*.txt; do echo "== $f"; grep -E '^  [a-z_]+ \(|Duration' $f; done
cat $W/source-*.log
echo "elapsed $(( $(date +%s) - START ))"
