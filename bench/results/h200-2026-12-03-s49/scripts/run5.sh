#!/usr/bin/env bash
# Run 5 (session 49), one call, the landed build: v3's kernels (PTX unchanged) with the host
# pairing tiles for every dtype (run 4's v3f, greedy_span without its dtype test). gpu_sampler
# at full size (its greedy-step test now has an f32 pair case), gpu_infra and gpu_reliability;
# then the grid and FlashInfer's harness.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run5.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in final/tests/*.xz final/*.xz peers/*.xz; do unxz $f; done
chmod +x final/tests/* final/sonic-bench final/run.sh peers/flashinfer_peers
md5sum final/sonic-bench final/tests/* peers/flashinfer_peers > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
cd $C/final; mkdir -p peers; cp ../peers/flashinfer_peers peers/
for t in gpu_sampler gpu_infra gpu_reliability; do
  timeout 200 ./tests/$t --test-threads=1 > $W/tests-$t.log 2>&1; echo "$t rc $? $(el)s"; grep -E "test result|FAILED|panicked|mismatch" $W/tests-$t.log | head -5
done
timeout 70 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"; grep -E "greedy \| (bf16|f32) \| (128256|151936|262144) \| (256|1024)" $W/grid/sonic-bench.md | head -12
timeout 50 bash ./run.sh flashinfer --out $W/grid/flashinfer-peers.json > $W/flashinfer.log 2>&1; echo "flashinfer rc $? $(el)s"; tail -1 $W/flashinfer.log
echo "elapsed $(el)"
