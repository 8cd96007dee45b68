#!/usr/bin/env bash
# Session 62, call 1: one bundle, `s62` (main with this session's first commit: sonic-bench's
# --only builds cells outside the grid; PinnedStaging::copy_out errs instead of clamping; PTX
# 3708d7b3, the landed kernels), carried as .carry/s62/ (xz'd).
# 1. alone on the GPU: the exact pass's first launch overlapped against in stream order, at the
#    row counts the benchmark's grid skips (ByRows picks by rows: overlapped from 64 to 132);
# 2. then together: all six test binaries (session 61's review versions of gpu_sampler and
#    gpu_verify have not run), racecheck and memcheck over those two at reduced sizes, and a
#    180 s soak (its review version has not run either).
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run1.tar.gz -C $W .' EXIT
. "$PWD/bench/candidates/carry-unpack.sh"
chmod +x */sonic-soak
md5sum */sonic-bench */sonic-soak */tests/* > $W/md5.txt
cd $C/s62
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $W/gpu.txt
CELLS=""
for b in 16 32 48 96 128 160 192; do
  for w in flat_topp095 heterogeneous peaked_topp095; do CELLS="$CELLS${CELLS:+,}$w:f32:128256:$b"; done
done
AB_SECONDS=120 timeout 260 ./run.sh ab $W/ab "$CELLS" 3 'serial=./sonic-bench --exact-order first-serial' 'ovl=./sonic-bench --exact-order overlapped' > $W/ab.log 2>&1
echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
(timeout 230 ./sonic-soak --seconds 180 --out $W/soak > $W/soak.log 2>&1; echo "soak rc $? $(el)s" >> $W/soak.log) &
for tool in racecheck memcheck; do for t in gpu_sampler gpu_verify; do
  (SONIC_SANITIZE=1 REQUIRE_GPU=1 timeout 250 compute-sanitizer --tool $tool --error-exitcode 1 ./tests/$t --test-threads=1 > $W/san-$tool-$t.log 2>&1; echo "rc $? $(el)s" >> $W/san-$tool-$t.log) &
done; done
( for t in gpu_sampler gpu_topk gpu_infra; do REQUIRE_GPU=1 timeout 200 ./tests/$t --test-threads=2 > $W/test-$t.log 2>&1; echo "$t rc $? $(el)s" >> $W/test-$t.log; done ) &
( for t in gpu_verify gpu_validation gpu_reliability; do REQUIRE_GPU=1 timeout 200 ./tests/$t --test-threads=2 > $W/test-$t.log 2>&1; echo "$t rc $? $(el)s" >> $W/test-$t.log; done ) &
wait
for f in $W/test-*.log; do grep -E "test result|FAILED|panicked" $f; tail -1 $f; done
for f in $W/san-*.log; do echo "$f: $(grep -E "test result|ERROR SUMMARY|RACECHECK SUMMARY" $f | tr '\n' ' ') $(tail -1 $f)"; done
tail -30 $W/soak.log
echo "elapsed $(el)"
