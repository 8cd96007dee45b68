#!/usr/bin/env bash
# Run 5 (session 41), one call. Builds: l3 = the final build of run 4; q1 = l3 with
# verify_rows' first pass loading the draft probabilities a tile ahead, as it loads the logits
# (they were loaded in their own tile after the prologue). A/B of the two on the verification
# cells with draft-probability rows, four rounds; then on q1 gpu_verify beside
# compute-sanitizer (racecheck, memcheck, initcheck, synccheck) over it.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run5.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz ../l3/*.xz; do unxz $f; done; chmod +x tests/* sonic-bench run.sh ../l3/sonic-bench
md5sum sonic-bench ../l3/sonic-bench tests/* > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
CELLS="verify_uniform:f32:128256:8,verify_uniform:f32:128256:32,verify_uniform:f32:128256:128,verify_uniform:f32:151936:32,verify_sampled:f32:128256:8,verify_sampled:f32:128256:32,verify_sampled:f32:128256:128,verify_hetero:f32:128256:8,verify_hetero:f32:128256:32,verify_hetero:f32:128256:128,verify_uniform:f32:128256:1,verify_accepted:f32:128256:32"
AB_SECONDS=40 timeout 150 bash ./run.sh ab $W/ab "$CELLS" 4 l3=../l3/sonic-bench q1=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
mkdir -p san/tests t/tests; cp run.sh san/; cp run.sh t/; cp tests/gpu_verify san/tests/; cp tests/gpu_verify t/tests/
LEFT=$(( 300 - $(el) )); echo "sanitizer budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=4 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
SP=$!
timeout $LEFT bash ./t/run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch" $W/tests.log | head -20
wait $SP; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
echo "elapsed $(el)"
