#!/usr/bin/env bash
# Run 3 (session 36): m1 alone on the GPU. A 25 s soak (run 2's ran beside the tests and twelve
# sanitizer jobs, so its device-wide memory check counted their allocations), then Nsight
# summaries of flat top-p 0.95 and heterogeneous at V 128256, B 256.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run3.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in *.xz; do unxz $f; done; chmod +x sonic-bench sonic-soak run.sh
md5sum sonic-bench sonic-soak > $W/md5.txt
timeout 40 bash ./run.sh soak --seconds 25 --out $W/soak > $W/soak.log 2>&1; echo "soak rc $? $(el)s"; tail -30 $W/soak.log
for cell in flat_topp095:f32:128256:256 heterogeneous:f32:128256:256; do
  timeout 60 bash ./run.sh profile $cell $W/profile > $W/profile-$cell.log 2>&1; echo "profile $cell rc $? $(el)s"; grep -E "^  [a-z_]+ \(|Duration" $W/profile-$cell.log | paste - - | awk '{print $1, $(NF)}' | head -12
done
rm -f $W/profile/*.ncu-rep
echo "elapsed $(el)"
