#!/usr/bin/env bash
# Run 3 (session 52), one call. base: 7a375b2 (PTX 1c70357a). ac: stage 2's merged list spread
# one key a thread up to 512 (run_per_thread) and gather_list_keys with two loads in flight
# (run 2's c without the pair weights). acf: ac, plus untruncated random rows skipping the
# prefix's scan and reductions on their way to the walk. A/B of the three on 17 cells (four
# rounds); the build with the lower mean ratio (acf only if lower by 0.002) then runs its five
# GPU test binaries beside the four sanitizers (reduced sizes), the grid and FlashInfer.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run3.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in base/*.xz ac/*.xz acf/*.xz ac/tests/*.xz acf/tests/*.xz ac/peers/*.xz acf/peers/*.xz; do unxz $f & done; wait
chmod +x */sonic-bench */tests/* */run.sh */peers/flashinfer_peers
md5sum */sonic-bench */tests/* ac/peers/flashinfer_peers > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
cd $C/ac
CELLS="topk50_topp09_t07:f32:32000:1,topk50_topp09_t07:f32:128256:1,topk50_topp09_t07:f32:128256:64,topk50_topp09_t07:f32:128256:256,topk50_topp09_t07:f32:128256:1024,random_full:f32:32000:1,random_full:f32:128256:1,random_full:f32:128256:64,random_full:f32:128256:256,random_full:f32:128256:1024,flat_full:f32:128256:1,flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,crowded_topk50:f32:128256:1,heterogeneous:f32:128256:8,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256"
AB_SECONDS=60 timeout 240 bash ./run.sh ab $W/ab "$CELLS" 4 base=../base/sonic-bench ac=./sonic-bench acf=../acf/sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
PICK=$(python3 - $W/ab/ab-table.txt <<'PY'
import sys
rows=[l.split('|') for l in open(sys.argv[1]) if l.startswith('| ') and not l.startswith('| workload')]
ac=[float(r[-3]) for r in rows]; acf=[float(r[-2]) for r in rows]
m=lambda v: sum(v)/len(v)
print('acf' if rows and m(acf) < m(ac) - 0.002 else 'ac')
PY
)
echo "mean ratios picked $PICK"; echo $PICK > $W/pick.txt
cd $C/$PICK
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_sampler tests/gpu_reliability tests/gpu_infra san/tests/
LEFT=$(( 420 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=8 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch|differ" $W/tests.log | head -20
wait; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
timeout 70 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"; grep -E "(heterogeneous|topk50_topp09_t07|random_full) \| f32 \| (32000|128256) \| (1|64|256) " $W/grid/sonic-bench.md | head -20
timeout 40 bash ./run.sh flashinfer --out $W/grid/flashinfer-peers.json > $W/flashinfer.log 2>&1; echo "flashinfer rc $? $(el)s"; tail -1 $W/flashinfer.log
echo "elapsed $(el)"
