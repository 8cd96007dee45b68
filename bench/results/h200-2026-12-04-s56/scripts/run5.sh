#!/usr/bin/env bash
# Run 5 (session 56), one call. Nsight summaries of base (session 55's final build) and vh3
# (run 4's) at verify_accepted B = 8 and 128 (V = 128256), to find which kernel costs
# all-greedy calls 1.5–2.6% in vh3.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run5.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in */*.xz; do unxz $f & done; wait
chmod +x */sonic-bench */run.sh
md5sum */sonic-bench */sampler_kernels.ptx > $W/md5.txt
for b in base vh3; do for cell in verify_accepted:f32:128256:8 verify_accepted:f32:128256:128; do timeout 45 bash $C/$b/run.sh profile $cell $W/nsight-$b > $W/nsight-$b-$(echo $cell | tr ':' '-').log 2>&1; echo "profile $b $cell rc $? $(el)s"; grep -E "^  [a-z_]+ \(|Duration" $W/nsight-$b/*$(echo $cell | tr ':' '-')-summary.txt; done; done
rm -f $W/nsight-*/*.ncu-rep
echo "elapsed $(el)"
