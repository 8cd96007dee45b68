#!/usr/bin/env bash
# Run 1 (session 21): every GPU test on session 20's final build (0557735; vm's PTX), which
# includes the strengthened repeated-token test; Nsight summaries of heterogeneous steps at
# V = 128256, B = 64 and 256.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run1.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in tests/*.gz *.gz; do gunzip -f $f; done; chmod +x tests/* sonic-bench run.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
timeout 260 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "FAILED|panicked|mismatch|differ|repeated" $W/tests.log | head -12
for cell in heterogeneous:f32:128256:64 heterogeneous:f32:128256:256; do
  timeout 120 bash ./run.sh profile $cell $W/profile > $W/profile-$cell.log 2>&1; echo "profile $cell rc $? $(( $(date +%s) - START ))s"
  grep -E "^  [a-z_]+ \(|Duration" $W/profile/*$(echo $cell | tr ':' '-')-summary.txt | paste - - | awk '{print $1, $(NF-1), $NF}'
done
echo "elapsed $(( $(date +%s) - START ))"
