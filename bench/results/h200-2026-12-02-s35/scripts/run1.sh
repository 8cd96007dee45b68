#!/usr/bin/env bash
# Run 1 (session 35): source-level Nsight profiles of the stage-1 kernels on the current main (n6),
# to see where heterogeneous and flat B = 256 spend their time.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run1.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in *.xz; do unxz $f; done; chmod +x sonic-bench run.sh
md5sum sonic-bench > $W/md5.txt
for spec in heterogeneous:f32:128256:256/sample_tiles heterogeneous:f32:128256:256/sample_tiles_mass flat_topp095:f32:128256:256/sample_tiles_mass topk50_topp09_t07:f32:128256:1024/sample_tiles; do
  [ $(el) -lt 420 ] || break
  cell=${spec%/*}; k=${spec#*/}
  timeout 110 bash ./run.sh profile-source $cell $k $W/source > $W/src-$k-$(echo $cell | tr ':' '-').log 2>&1; echo "source $cell $k rc $? $(el)s"; tail -4 $W/src-$k-$(echo $cell | tr ':' '-').log
done
for cell in topk50_topp09_t07:f32:128256:1024 heterogeneous:f32:128256:256; do
  [ $(el) -lt 500 ] || break
  timeout 60 bash ./run.sh profile $cell $W/profile > $W/profile-$cell.log 2>&1; echo "profile $cell rc $? $(el)s"; grep -E "^  [a-z_]+ \(|Duration" $W/profile-$cell.log | paste - - | awk '{print $1, $(NF)}' | head -8
done
rm -f $W/profile/*.ncu-rep
echo "elapsed $(el)"
