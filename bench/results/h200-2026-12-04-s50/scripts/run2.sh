#!/usr/bin/env bash
# Run 2 (session 50), one call. Host-only variants, the landed PTX (md5 1c70357a): the two
# stage-1 kernels of a mixed step run side by side (sample_tiles lets sample_tiles_mass start
# at once, `overlap_stage1`) on grids of up to 3 (ov3) or 6 (ov6) waves, not one alone (base,
# session 49's final build). A/B on mixed cells of one to ten waves; ov6's five GPU test
# binaries beside the four sanitizers at reduced sizes over three of them.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run2.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in ov6/tests/*.xz ov6/*.xz ov3/*.xz base/*.xz; do unxz $f & done; wait
chmod +x ov6/tests/* */sonic-bench ov6/run.sh
md5sum */sonic-bench ov6/tests/* > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
cd $C/ov6
CELLS="heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,heterogeneous:bf16:128256:256,heterogeneous:f32:151936:256,heterogeneous:bf16:151936:256,heterogeneous:f32:262144:64,heterogeneous:f32:262144:256,heterogeneous:bf16:262144:256,heterogeneous:f32:32000:1024,heterogeneous:f32:128256:1024"
AB_SECONDS=60 timeout 220 bash ./run.sh ab $W/ab "$CELLS" 4 base=../base/sonic-bench ov3=../ov3/sonic-bench ov6=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_sampler tests/gpu_reliability tests/gpu_infra san/tests/
LEFT=$(( 540 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=8 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch|differ" $W/tests.log | head -20
wait; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
echo "elapsed $(el)"
