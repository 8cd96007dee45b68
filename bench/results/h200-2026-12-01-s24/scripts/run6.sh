#!/usr/bin/env bash
# Run 6 (session 24): the final build's (cf52b3f) Nsight summary of flat top-p 0.95,
# V = 128256, B = 256, and source counters of exact_finish at B = 1 and B = 64, for the next
# session.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run6.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
gunzip -f v2-bench.gz; chmod +x v2-bench run.sh; cp v2-bench sonic-bench
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
cell=flat_topp095:f32:128256:256
timeout 60 bash ./run.sh profile $cell $W/profile > $W/profile-$(echo $cell | tr ':' '-').log 2>&1; echo "profile $cell rc $? $(( $(date +%s) - START ))s"
grep -E "^  [a-z_]+ \(|Duration" $W/profile/$(echo $cell | tr ':' '-')-summary.txt | paste - - | awk '{print $1, $(NF-1), $NF}'
rm -f $W/profile/*.ncu-rep
for cell in flat_topp095:f32:128256:1 flat_topp095:f32:128256:64; do
  left=$(( 300 - ($(date +%s) - START) )); [ $left -gt 50 ] || break
  NCU_EXTRA="--warp-sampling-interval 0" timeout 60 bash ./run.sh profile-source $cell exact_finish $W/source > $W/source-$(echo $cell | tr ':' '-').log 2>&1; echo "source $cell rc $? $(( $(date +%s) - START ))s"; tail -2 $W/source-$(echo $cell | tr ':' '-').log
done
echo "elapsed $(( $(date +%s) - START ))"
