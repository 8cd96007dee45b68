#!/usr/bin/env bash
# Run 1 (session 40), one call. Builds: base = session 39's final kernels (065fe59); w1 = a
# random verification row taken alone or by a group in turn waits for the row before it to
# decide (rejection_seen) instead of running ahead; w2 = w1 with greedy rows waiting too.
# A/B of the three on the verification cells, four rounds; then on w1 the grid, and the five
# GPU test binaries beside compute-sanitizer (racecheck, memcheck, initcheck, synccheck) over
# gpu_verify and memcheck over gpu_sampler.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run1.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz ../base/*.xz ../w2/*.xz; do unxz $f; done; chmod +x tests/* sonic-bench run.sh ../base/sonic-bench ../w2/sonic-bench
md5sum sonic-bench ../base/sonic-bench ../w2/sonic-bench tests/* > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
CELLS="verify_uniform:f32:128256:1,verify_uniform:f32:128256:8,verify_uniform:f32:128256:32,verify_uniform:f32:128256:128,verify_uniform:f32:151936:32,verify_hetero:f32:128256:1,verify_hetero:f32:128256:8,verify_hetero:f32:128256:32,verify_hetero:f32:128256:128,verify_sampled:f32:128256:8,verify_sampled:f32:128256:32,verify_sampled:f32:128256:128,verify_accept70:f32:128256:32,verify_accept70:f32:128256:128,verify_accepted:f32:128256:32,verify_accepted:f32:128256:128"
AB_SECONDS=40 timeout 200 bash ./run.sh ab $W/ab "$CELLS" 4 base=../base/sonic-bench w1=./sonic-bench w2=../w2/sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
timeout 60 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"; grep -A10 "Exact pass against" $W/grid/sonic-bench.md | tail -7
mkdir -p san/tests; cp run.sh san/; cp tests/gpu_verify san/tests/
LEFT=$(( 560 - $(el) - 15 )); echo "sanitizer budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=4 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
SP=$!
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch|skipped, " $W/tests.log | head -20
wait $SP; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
echo "elapsed $(el)"
