#!/usr/bin/env bash
# Run 2 (session 26): every GPU test on the quiet build (267f909: quiet steps launch no exact
# pass, sample_rows_quiet finishes their undecided rows); A/B of base (session 25's final k3,
# bada4f9), new (888b437: quiet steps' exact pass as exact_tail, overlapped) and quiet
# (267f909); Nsight summary of the quiet build on top-k 50 + top-p 0.9, V = 128256, B = 1;
# memcheck over the five test binaries with the time left.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run2.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in tests/*.gz *.gz; do gunzip -f $f; done; chmod +x tests/* *-bench sonic-soak run.sh; cp quiet-bench sonic-bench
md5sum *-bench sonic-bench tests/* > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
timeout 270 bash ./run.sh > $W/tests.log 2>&1; trc=$?; echo "tests rc $trc $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "FAILED|panicked|mismatch|differ" $W/tests.log | head -20
CELLS="topk50_topp09_t07:f32:128256:1,topk50_topp09_t07:f32:128256:8,topk50_topp09_t07:f32:128256:64,topk50_topp09_t07:f32:128256:256,topk50_topp09_t07:f32:32000:1,random_full:f32:128256:1,random_full:f32:128256:64,heterogeneous:f32:128256:8,flat_topp095:f32:128256:1,greedy:f32:128256:1"
AB_SECONDS=70 timeout 220 bash ./run.sh ab $W/ab "$CELLS" 2 base=./k3-bench new=./new-bench quiet=./quiet-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
cell=topk50_topp09_t07:f32:128256:1
timeout 60 bash ./run.sh profile $cell $W/profile > $W/profile-$(echo $cell | tr ':' '-').log 2>&1; echo "profile $cell rc $? $(( $(date +%s) - START ))s"
grep -E "^  [a-z_]+ \(|Duration" $W/profile/$(echo $cell | tr ':' '-')-summary.txt | paste - - | awk '{print $1, $(NF-1), $NF}'
rm -f $W/profile/*.ncu-rep
left=$(( 570 - ($(date +%s) - START) )); echo "memcheck budget $left s"
if [ $trc -eq 0 ] && [ $left -gt 60 ]; then
  SANITIZE_TOOLS=memcheck SANITIZE_SECONDS=$left timeout $((left + 15)) bash ./run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "sanitize rc $? $(( $(date +%s) - START ))s"
  cat $W/sanitizer/summary.txt
fi
echo "elapsed $(( $(date +%s) - START ))"
