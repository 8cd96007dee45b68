#!/usr/bin/env bash
# Run 2 (session 54), one call. Run 1's w1 (stage 2's warp route, out of line) took
# `sample_rows_quiet` from 20.6 to 48 µs for a top-k 50 + top-p row at B = 1. Source counters
# sampled every 32 cycles of that kernel in that cell, on base and w1, to see where the warp's
# time goes; the same for the mixed batch at B = 8 on w1.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run2.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in base/*.xz w1/*.xz; do unxz $f & done; wait
chmod +x */sonic-bench w1/run.sh; cp w1/run.sh base/
md5sum */sonic-bench > $W/md5.txt
echo "unpacked $(el)s"
for b in w1 base; do
  cd $C/$b
  NCU_EXTRA="--warp-sampling-interval 0" timeout 120 bash ./run.sh profile-source topk50_topp09_t07:f32:128256:1 sample_rows_quiet $W/src-$b > $W/src-$b.log 2>&1; echo "$b rc $? $(el)s"; cat $W/src-$b.log | tail -4
done
echo "elapsed $(el)"
