#!/usr/bin/env bash
# Run 2 (session 58), one call. base: the landed build (ecb17a6, PTX 3708d7b3). rc: base with
# the radix selection's per-key histogram body out of line (`radix_count_key`, PTX c9ee49eb).
# base's gpu_verify (the landed kernels under ecb17a6's test assertions) and rc's gpu_verify,
# beside the four sanitizers over rc's gpu_verify; an A/B of base and rc (four rounds); rc's
# grid and FlashInfer's harness.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run2.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in */*.xz */tests/*.xz; do unxz $f & done; wait
mv fi/flashinfer_peers rc/peers/
chmod +x */sonic-bench */tests/* */run.sh rc/peers/flashinfer_peers
md5sum */sonic-bench */tests/* rc/sampler_kernels.ptx rc/peers/flashinfer_peers > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
cd $C/rc
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_verify san/tests/
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=4 SANITIZE_SECONDS=200 timeout 210 bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
(cd $C/base && timeout 200 bash ./run.sh > $W/tests-base.log 2>&1; echo "base tests rc $? $(el)s" >> $W/tests-base.log) &
timeout 200 bash ./run.sh > $W/tests-rc.log 2>&1; echo "rc tests rc $? $(el)s"
wait; tail -1 $W/tests-base.log; for f in $W/tests-base.log $W/tests-rc.log; do echo "== $f"; grep -E "^==|test result|FAILED|panicked|mismatch|differ" $f | head -20; done
echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
CELLS="verify_hetero:f32:128256:1,verify_hetero:f32:128256:8,verify_hetero:f32:128256:32,verify_hetero:f32:128256:128,verify_hetero:f32:151936:1,verify_hetero:f32:151936:8,verify_hetero:f32:151936:32,verify_hetero:f32:151936:128,verify_uniform:f32:128256:8,verify_uniform:f32:128256:128,verify_sampled:f32:128256:8,verify_accepted:f32:128256:8"
AB_SECONDS=90 timeout 170 bash ./run.sh ab $W/ab "$CELLS" 4 base=$C/base/sonic-bench rc=$C/rc/sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
timeout 90 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"
timeout 40 bash ./run.sh flashinfer --out $W/grid/flashinfer-peers.json > $W/flashinfer.log 2>&1; echo "flashinfer rc $? $(el)s"; tail -1 $W/flashinfer.log
echo "elapsed $(el)"
