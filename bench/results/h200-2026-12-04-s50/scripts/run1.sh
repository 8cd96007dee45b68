#!/usr/bin/env bash
# Run 1 (session 50), one call. v1: featured rows (bitmask, bias or penalties) ask L2 for their
# logits (sample_tiles, sample_tiles_half) and penalty counts (those and the ring and mass
# scans) four rounds at a time, four rounds ahead. v2: the counts alone. A/B of base (session
# 49's final build), v1 and v2; Nsight of heterogeneous f32 B = 256 on base and v1; v1's five
# GPU test binaries beside the four sanitizers at reduced sizes; the grid and FlashInfer on v1.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run1.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in v1/tests/*.xz v1/*.xz v2/*.xz base/*.xz peers/*.xz; do unxz $f & done; wait
chmod +x v1/tests/* */sonic-bench v1/run.sh peers/flashinfer_peers
md5sum */sonic-bench v1/tests/* peers/flashinfer_peers > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
cd $C/v1
mkdir -p peers; cp ../peers/flashinfer_peers peers/
CELLS="heterogeneous:f32:128256:8,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,heterogeneous:f32:128256:1024,heterogeneous:bf16:128256:64,heterogeneous:bf16:128256:256,heterogeneous:bf16:128256:1024,heterogeneous:f32:151936:256,topk50_topp09_t07:bf16:128256:256,random_full:f32:128256:256,greedy:bf16:128256:1024,greedy:f32:128256:256"
AB_SECONDS=60 timeout 200 bash ./run.sh ab $W/ab "$CELLS" 4 base=../base/sonic-bench v1=./sonic-bench v2=../v2/sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
mkdir -p $W/nsight-base; cp run.sh ../base/; (cd ../base && mkdir -p tests && timeout 40 bash ./run.sh profile heterogeneous:f32:128256:256 $W/nsight-base > $W/nsight-base.log 2>&1); echo "nsight base rc $? $(el)s"
timeout 40 bash ./run.sh profile heterogeneous:f32:128256:256 $W/nsight > $W/nsight.log 2>&1; echo "nsight v1 rc $? $(el)s"
for d in nsight-base nsight; do echo "== $d"; grep -E "^  [a-z_]+ \(|Duration" $W/$d/*-summary.txt | paste - - | awk '{print $1, $(NF)}'; done
rm -f $W/nsight*/*.ncu-rep
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_sampler tests/gpu_reliability tests/gpu_infra san/tests/
LEFT=$(( 520 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=8 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch|differ" $W/tests.log | head -20
wait; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
timeout 60 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"; grep -E "heterogeneous \| (f32|bf16) \| (128256|151936) \| (64|256|1024)" $W/grid/sonic-bench.md | head -12
timeout 30 bash ./run.sh flashinfer --out $W/grid/flashinfer-peers.json > $W/flashinfer.log 2>&1; echo "flashinfer rc $? $(el)s"; tail -1 $W/flashinfer.log
echo "elapsed $(el)"
