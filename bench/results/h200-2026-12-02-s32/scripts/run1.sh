#!/usr/bin/env bash
# Run 1 (session 32): where the exact pass's row kernels wait, on f8 (main at 8498269).
# Nsight summaries of peaked top-p 0.95 at V 128256 B 1 and 64 (peaked rows that take the exact
# pass cost more than flat ones); source counters of exact_finish and exact_bins at flat top-p
# 0.95 B 64, and of exact_finish at peaked B 64.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run1.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
unxz sonic-bench.xz; chmod +x sonic-bench run.sh
md5sum sonic-bench > $W/md5.txt
for c in peaked_topp095:f32:128256:1 peaked_topp095:f32:128256:64 flat_topp095:f32:128256:64; do
  timeout 100 bash ./run.sh profile $c $W/profile > $W/profile-$c.log 2>&1; echo "profile $c rc $? $(( $(date +%s) - START ))s"; cat $W/profile/*$(echo $c | tr ':' '-')-summary.txt | grep -E "^  [a-z]|Duration"
  rm -f $W/profile/*.ncu-rep
done
for kc in "flat_topp095:f32:128256:64 exact_finish" "flat_topp095:f32:128256:64 exact_bins" "peaked_topp095:f32:128256:64 exact_finish" "peaked_topp095:f32:128256:64 sample_rows"; do
  set -- $kc
  timeout 120 bash ./run.sh profile-source $1 $2 $W/source > $W/source-$1-$2.log 2>&1; echo "source $1 $2 rc $? $(( $(date +%s) - START ))s"; cat $W/source-$1-$2.log | tail -4
done
echo "elapsed $(( $(date +%s) - START ))"
