#!/usr/bin/env bash
# Run 4 (session 51), one call. head: 1810892 (c4ece30's code, doc comments since). e5: head's
# code with exact_histogram and exact_gather launched as their plain builds, not the `_runs`
# ones, when a listable row cannot be a warp row (random, top-p, no min-p, no top-k, no bias);
# base's PTX. A/B of head and e5; head's five GPU test binaries beside the four sanitizers over
# gpu_sampler, gpu_reliability and gpu_infra (reduced sizes).
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run4.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in head/*.xz head/tests/*.xz e5/*.xz; do unxz $f & done; wait
chmod +x */sonic-bench head/tests/* head/run.sh
md5sum */sonic-bench head/tests/* > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
cd $C/head
CELLS="heterogeneous:f32:128256:8,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,heterogeneous:f32:128256:1024,heterogeneous:bf16:128256:256,heterogeneous:f32:151936:256,heterogeneous:f32:151936:64,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256"
AB_SECONDS=60 timeout 200 bash ./run.sh ab $W/ab "$CELLS" 4 head=./sonic-bench e5=../e5/sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_sampler tests/gpu_reliability tests/gpu_infra san/tests/
LEFT=$(( 470 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=8 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch|differ" $W/tests.log | head -20
wait; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
echo "elapsed $(el)"
