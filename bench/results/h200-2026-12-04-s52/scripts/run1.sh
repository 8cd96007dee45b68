#!/usr/bin/env bash
# Run 1 (session 52), one call: fine-sampled source counters (--warp-sampling-interval 0,
# every 32 cycles) of the latency-bound kernels: stage 2 alone at B = 1 (top-k 50 + top-p at
# V = 128256, untruncated at V = 32000), stage 1's ring build at B = 1, the exact pass's row
# kernels at heterogeneous B = 64, verify_rows at verify_hetero B = 8; Nsight summaries of
# three small cells. Build: 7a375b2 (session 51's final code, PTX 1c70357a).
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run1.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in base/*.xz; do unxz $f & done; wait
chmod +x base/sonic-bench base/run.sh
md5sum base/sonic-bench > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
cd $C/base; mkdir -p tests
export NCU_EXTRA="--warp-sampling-interval 0"
src() { timeout 70 bash ./run.sh profile-source $1 $2 $W/source >> $W/source.log 2>&1; echo "source $1 $2 rc $? $(el)s"; }
src topk50_topp09_t07:f32:128256:1 sample_rows_quiet
src random_full:f32:32000:1 sample_rows_quiet
src topk50_topp09_t07:f32:128256:1 sample_tiles_ring
src heterogeneous:f32:128256:64 exact_finish
src heterogeneous:f32:128256:64 exact_bins
src verify_hetero:f32:128256:8 verify_rows
unset NCU_EXTRA
for c in random_full:f32:32000:1 topk128:f32:32000:1 heterogeneous:f32:128256:64; do
  timeout 40 bash ./run.sh profile $c $W/nsight > /dev/null 2>&1; echo "nsight $c rc $? $(el)s"
done
rm -f $W/nsight/*.ncu-rep
for f in $W/nsight/*-summary.txt; do echo "== $f"; grep -E "^  [a-z_]+ \(|Duration" $f | paste - - | awk '{print $1, $(NF)}'; done
grep -E "Duration|Warp Cycles Per Issued|wrote" $W/source.log
echo "elapsed $(el)"
