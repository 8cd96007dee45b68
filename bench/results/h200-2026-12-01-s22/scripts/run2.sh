#!/usr/bin/env bash
# Run 2 (session 22): v2 (6fe4556: band sums a warp per band in stage 2, the edges' searches in
# two lanes, the histogram's band tokens packed per warp, the gather's items from the last)
# under every GPU test; A/B of base (dc35e17), v1 (3e27c37) and v2, two rounds; Nsight
# summaries of flat top-p 0.95 B = 1 and 256 on v2; compute-sanitizer (four tools, five
# binaries, reduced sizes) on v2 if its tests passed.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run2.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in tests/*.gz *.gz; do gunzip -f $f; done; chmod +x tests/* *-bench run.sh; cp v2-bench sonic-bench
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
timeout 230 bash ./run.sh > $W/tests.log 2>&1; trc=$?; echo "tests rc $trc $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "FAILED|panicked|mismatch|differ" $W/tests.log | head -20
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:256,flat_full:f32:128256:256,peaked_topp095:f32:128256:256,heterogeneous:f32:128256:64,heterogeneous:f32:128256:1024,topk50_topp09_t07:f32:128256:1"
AB_SECONDS=100 timeout 200 bash ./run.sh ab $W/ab "$CELLS" 2 base=./base-bench v1=./v1-bench v2=./v2-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
for cell in flat_topp095:f32:128256:1 flat_topp095:f32:128256:256; do
  timeout 60 bash ./run.sh profile $cell $W/profile > $W/profile-$(echo $cell | tr ':' '-').log 2>&1; echo "profile $cell rc $? $(( $(date +%s) - START ))s"
  grep -E "^  [a-z_]+ \(|Duration" $W/profile/$(echo $cell | tr ':' '-')-summary.txt | paste - - | awk '{print $1, $(NF-1), $NF}'
done
rm -f $W/profile/*.ncu-rep
left=$(( 565 - ($(date +%s) - START) )); echo "sanitizer budget $left s"
if [ $trc -eq 0 ] && [ $left -gt 120 ]; then
  SANITIZE_SECONDS=$left timeout $((left + 15)) bash ./run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "sanitize rc $? $(( $(date +%s) - START ))s"; tail -25 $W/sanitizer/summary.txt 2>/dev/null
fi
echo "elapsed $(( $(date +%s) - START ))"
