#!/usr/bin/env bash
# Run 1 (session 25): every GPU test on k2 (2255c9d: the block sort in registers up to 1024
# keys, one barrier per shared stage; exact_finish keeps the first key's weight); A/B of base
# (session 24's final, cf52b3f), k1 (k2 with the register sort up to 512 keys only) and k2;
# Nsight summary of k2 on flat top-p 0.95, V = 151936, B = 64.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run1.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in tests/*.gz base-bench.gz k1-bench.gz k2-bench.gz; do gunzip -f $f; done; chmod +x tests/* *-bench run.sh; cp k2-bench sonic-bench
md5sum *-bench tests/* > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
timeout 220 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "FAILED|panicked|mismatch|differ" $W/tests.log | head -20
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:64,flat_full:f32:128256:1,heterogeneous:f32:128256:1,heterogeneous:f32:128256:64,topk50_topp09_t07:f32:128256:1,peaked_topp095:f32:128256:64,random_full:f32:128256:8"
AB_SECONDS=80 timeout 330 bash ./run.sh ab $W/ab "$CELLS" 2 base=./base-bench k1=./k1-bench k2=./k2-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
left=$(( 570 - ($(date +%s) - START) )); echo "left $left s"
cell=flat_topp095:f32:151936:64
if [ $left -gt 45 ]; then
  timeout $((left - 5)) bash ./run.sh profile $cell $W/profile > $W/profile-$(echo $cell | tr ':' '-').log 2>&1; echo "profile $cell rc $? $(( $(date +%s) - START ))s"
  grep -E "^  [a-z_]+ \(|Duration" $W/profile/$(echo $cell | tr ':' '-')-summary.txt | paste - - | awk '{print $1, $(NF-1), $NF}'
  rm -f $W/profile/*.ncu-rep
fi
echo "elapsed $(( $(date +%s) - START ))"
