#!/usr/bin/env bash
# Run 1 (session 26): every GPU test on the new build (888b437: ExactPassLaunch::BySettings, the
# closed-form stage count); A/B of base (session 25's final k3, bada4f9, --exact-pass four by
# default), one (k3 --exact-pass one), new (888b437, its default BySettings), new4 (888b437
# --exact-pass four) and noexact (an experiment: quiet steps launch no exact pass at all);
# Nsight summary of the new build on top-k 50 + top-p 0.9, V = 128256, B = 1.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run1.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in tests/*.gz *.gz; do gunzip -f $f; done; chmod +x tests/* *-bench sonic-soak run.sh *.sh; cp new-bench sonic-bench
md5sum *-bench sonic-bench tests/* > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
timeout 240 bash ./run.sh > $W/tests.log 2>&1; trc=$?; echo "tests rc $trc $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "FAILED|panicked|mismatch|differ" $W/tests.log | head -20
CELLS="topk50_topp09_t07:f32:128256:1,topk50_topp09_t07:f32:128256:8,topk50_topp09_t07:f32:128256:64,topk50_topp09_t07:f32:32000:1,random_full:f32:128256:1,random_full:f32:128256:64,heterogeneous:f32:128256:8,flat_topp095:f32:128256:1"
AB_SECONDS=70 timeout 270 bash ./run.sh ab $W/ab "$CELLS" 2 base=./k3-bench one=./one.sh new=./new-bench new4=./new4.sh noexact=./noexact-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
left=$(( 570 - ($(date +%s) - START) )); echo "left $left s"
cell=topk50_topp09_t07:f32:128256:1
if [ $left -gt 45 ]; then
  timeout $((left - 5)) bash ./run.sh profile $cell $W/profile > $W/profile-$(echo $cell | tr ':' '-').log 2>&1; echo "profile $cell rc $? $(( $(date +%s) - START ))s"
  grep -E "^  [a-z_]+ \(|Duration" $W/profile/$(echo $cell | tr ':' '-')-summary.txt | paste - - | awk '{print $1, $(NF-1), $NF}'
  rm -f $W/profile/*.ncu-rep
fi
echo "elapsed $(( $(date +%s) - START ))"
