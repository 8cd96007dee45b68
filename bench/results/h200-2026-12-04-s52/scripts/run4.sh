#!/usr/bin/env bash
# Run 4 (session 52), one call. base: 7a375b2 (PTX 1c70357a). acf: 640add6, run 3's landed
# build (PTX 4f03e67c). d: acf, plus the row-mass sums of `summarize` and the walk's tile masses
# reading their record words four items at once (`bands_at_once`: counts and ceilings, then
# band sums, then shares) instead of three dependent loads an item. A/B of the three on 17
# cells (four rounds); Nsight summaries of flat top-p 0.95 and flat_full B = 64 on d; if d's
# mean ratio is below acf's by 0.002, d's five GPU test binaries beside the four sanitizers,
# the grid and FlashInfer's harness.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run4.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in base/*.xz acf/*.xz d/*.xz d/tests/*.xz d/peers/*.xz; do unxz $f & done; wait
chmod +x */sonic-bench d/tests/* d/run.sh d/peers/flashinfer_peers
md5sum */sonic-bench d/tests/* d/peers/flashinfer_peers > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
cd $C/d
CELLS="topk50_topp09_t07:f32:32000:1,topk50_topp09_t07:f32:128256:1,topk50_topp09_t07:f32:128256:64,topk50_topp09_t07:f32:128256:256,random_full:f32:32000:1,random_full:f32:128256:1,random_full:f32:128256:64,random_full:f32:128256:256,random_full:f32:128256:1024,flat_full:f32:128256:1,flat_full:f32:128256:64,flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:151936:256,heterogeneous:f32:128256:8,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256"
AB_SECONDS=60 timeout 240 bash ./run.sh ab $W/ab "$CELLS" 4 base=../base/sonic-bench acf=../acf/sonic-bench d=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
for c in flat_topp095:f32:128256:64 flat_full:f32:128256:64; do
  timeout 40 bash ./run.sh profile $c $W/nsight > /dev/null 2>&1; echo "nsight $c rc $? $(el)s"
done
rm -f $W/nsight/*.ncu-rep
for f in $W/nsight/*-summary.txt; do echo "== $f"; grep -E "^  [a-z_]+ \(|Duration" $f | paste - - | awk '{print $1, $(NF)}'; done
PICK=$(python3 - $W/ab/ab-table.txt <<'PY'
import sys
rows=[l.split('|') for l in open(sys.argv[1]) if l.startswith('| ') and not l.startswith('| workload')]
acf=[float(r[-3]) for r in rows]; d=[float(r[-2]) for r in rows]
m=lambda v: sum(v)/len(v)
print('d' if rows and m(d) < m(acf) - 0.002 else 'acf')
PY
)
echo "mean ratios picked $PICK"; echo $PICK > $W/pick.txt
[ "$PICK" = d ] || { echo "elapsed $(el)"; exit 0; }
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_sampler tests/gpu_reliability tests/gpu_infra san/tests/
LEFT=$(( 440 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=8 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch|differ" $W/tests.log | head -20
wait; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
timeout 70 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"; grep -E "(heterogeneous|topk50_topp09_t07|random_full) \| f32 \| (32000|128256) \| (1|64|256) " $W/grid/sonic-bench.md | head -20
timeout 40 bash ./run.sh flashinfer --out $W/grid/flashinfer-peers.json > $W/flashinfer.log 2>&1; echo "flashinfer rc $? $(el)s"; tail -1 $W/flashinfer.log
echo "elapsed $(el)"
