#!/usr/bin/env bash
# Run 2 (session 52), one call. base: 7a375b2 (session 51's final code, PTX 1c70357a).
# a: stage 2 spreads its merged list one key a thread up to 512 (run_per_thread), so each
# thread's weights are one call. c: a, plus walk_tile's weights two a call and
# gather_list_keys with two loads in flight. A/B of the three on 15 cells (four rounds); c's
# five GPU test binaries beside the four sanitizers over gpu_sampler, gpu_reliability and
# gpu_infra (reduced sizes).
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run2.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in base/*.xz a/*.xz c/*.xz c/tests/*.xz; do unxz $f & done; wait
chmod +x */sonic-bench c/tests/* c/run.sh
md5sum */sonic-bench c/tests/* > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
cd $C/c
CELLS="topk50_topp09_t07:f32:32000:1,topk50_topp09_t07:f32:128256:1,topk50_topp09_t07:f32:128256:64,topk50_topp09_t07:f32:128256:256,topk50_topp09_t07:f32:128256:1024,random_full:f32:32000:1,random_full:f32:128256:1,random_full:f32:128256:64,flat_full:f32:128256:1,flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,crowded_topk50:f32:128256:1,heterogeneous:f32:128256:8,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256"
AB_SECONDS=60 timeout 240 bash ./run.sh ab $W/ab "$CELLS" 4 base=../base/sonic-bench a=../a/sonic-bench c=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_sampler tests/gpu_reliability tests/gpu_infra san/tests/
LEFT=$(( 500 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=8 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch|differ" $W/tests.log | head -20
wait; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
echo "elapsed $(el)"
