#!/usr/bin/env bash
# Run 4 (session 46), one call. v7: fixed::soft_ceil is ceil for every finite value (it was the
# value itself between 2^22 and 2^23, where a half-integer band took the weight of the band
# below it: the log-probability gap of docs/SEMANTICS.md 7). Nearly every kernel's SASS grew by
# a few instructions; registers and spills are unchanged. A/B of base (513fa09, session 46's
# landed kernels) and v7 on 16 sampling and verification cells (four rounds); the five GPU
# test binaries on v7 (gpu_verify's special-values test now has huge rows at +-6e6 too) beside
# racecheck, memcheck, initcheck and synccheck over gpu_verify, gpu_sampler, gpu_reliability
# and gpu_infra.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run4.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz sonic-bench.xz ../base/*.xz; do unxz $f; done
chmod +x tests/* sonic-bench run.sh ../base/sonic-bench
md5sum sonic-bench ../base/sonic-bench tests/* > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
CELLS="topk50_topp09_t07:f32:128256:1,topk50_topp09_t07:f32:128256:64,topk50_topp09_t07:f32:128256:256,random_full:f32:128256:1,random_full:f32:128256:256,heterogeneous:f32:128256:8,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,verify_uniform:f32:128256:32,verify_uniform:f32:128256:128,verify_hetero:f32:128256:8,verify_hetero:f32:128256:32,verify_hetero:f32:128256:128"
AB_SECONDS=60 timeout 200 bash ./run.sh ab $W/ab "$CELLS" 4 base=../base/sonic-bench v7=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_verify tests/gpu_sampler tests/gpu_reliability tests/gpu_infra san/tests/
LEFT=$(( 560 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=8 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
SP=$!
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch|differ" $W/tests.log | head -20
wait $SP; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
echo "elapsed $(el)"
