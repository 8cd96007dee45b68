#!/usr/bin/env bash
# Run 2 (session 30): main (v8). Source counters (stall reasons per SASS instruction) of the
# B 1 steps' kernels and of heterogeneous B 64's stage 1: where a lone row's stage 2 waits.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run2.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in *.xz; do unxz $f; done; chmod +x sonic-bench run.sh
md5sum sonic-bench > $W/md5.txt
for spec in random_full:f32:128256:1/sample_rows_quiet topk50_topp09_t07:f32:128256:1/sample_rows_quiet greedy:f32:128256:1/sample_tiles_greedy topk50_topp09_t07:f32:128256:1/sample_tiles heterogeneous:f32:128256:64/sample_tiles heterogeneous:f32:128256:64/sample_rows random_full:f32:128256:64/sample_rows_quiet; do
  cell=${spec%/*}; k=${spec#*/}
  timeout 90 bash ./run.sh profile-source $cell $k $W/source > $W/source-$(echo $cell | tr ':' '-')-$k.log 2>&1; echo "source $spec rc $? $(( $(date +%s) - START ))s"; cat $W/source-$(echo $cell | tr ':' '-')-$k.log | head -4
done
echo "elapsed $(( $(date +%s) - START ))"
