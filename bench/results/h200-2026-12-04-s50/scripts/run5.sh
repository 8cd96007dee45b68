#!/usr/bin/env bash
# Run 5 (session 50), one call: the review commit's binaries (one record-tail offset and writer;
# PTX md5 1c70357a, unchanged). As run 4.
# The five GPU test binaries beside the four sanitizers over gpu_sampler, gpu_reliability and
# gpu_infra (reduced sizes); one benchmark cell to see the bench binary run.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run5.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in head/tests/*.xz head/*.xz; do unxz $f & done; wait
chmod +x head/tests/* head/sonic-bench head/run.sh
md5sum head/sonic-bench head/tests/* > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
cd $C/head
timeout 60 ./sonic-bench --only heterogeneous:f32:151936:256 --out $W/cell > $W/cell.log 2>&1; echo "cell rc $? $(el)s"; grep -E "^\| heterogeneous" $W/cell/sonic-bench.md
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_sampler tests/gpu_reliability tests/gpu_infra san/tests/
LEFT=$(( 500 - $(el) )); echo "test budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=8 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch|differ" $W/tests.log | head -20
wait; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
echo "elapsed $(el)"
