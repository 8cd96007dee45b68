#!/usr/bin/env bash
# Next device session, call 1 of 2 (written in session 60, when no device was lent; not yet run).
# Three bundles, built here from one commit of main and copied into .carry/ (xz'd, as in
# bench/results/h200-2026-12-04-s58/scripts/run1.sh; park bench/results/h200-* outside the tree
# during the call, to stay under the 64 MiB a call carries):
#   base: main as it stands (the landed kernels, PTX 3708d7b3 in session 60)
#   rc2:  + bench/results/h200-2026-12-04-s58/e-radix-key-shared-out-of-line-rc2.diff
#   pk:   + bench/candidates/pk-pick-weighs-as-sum-span.diff
# each as .carry/NAME/{sonic-bench,run.sh,tests/*} (`cargo xtask bundle`, then move `bundle/`).
# This call:
# 1. base's six test binaries: session 60's host API tests (device outputs, device bitmasks, a
#    sampler on the caller's stream, gpu_validation's bad inputs) have never run on a GPU, nor
#    have session 59's skip tests, which run again with --nocapture to keep their per-call lines;
# 2. rc2's and pk's test binaries;
# 3. the four sanitizers over base's gpu_validation (never sanitized: it was not in the bundle),
#    rc2's gpu_sampler and gpu_verify, and pk's gpu_verify: 16 jobs, 8 at once. Base's other
#    binaries run the landed kernels, sanitized in sessions 55 and 57; session 60's host code
#    adds driver copies, which compute-sanitizer does not check.
# The tests of the three builds share the GPU with the sanitizers; a build whose tests fail is
# left out of call 2.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run1.tar.gz -C $W .' EXIT
. "$PWD/bench/candidates/carry-unpack.sh"
md5sum */sonic-bench */tests/* > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
mkdir -p $C/san/tests; cp $C/base/run.sh $C/san/
cp $C/base/tests/gpu_validation $C/san/tests/gpu_validation_base
cp $C/rc2/tests/gpu_verify $C/san/tests/gpu_verify_rc2; cp $C/rc2/tests/gpu_sampler $C/san/tests/gpu_sampler_rc2; cp $C/pk/tests/gpu_verify $C/san/tests/gpu_verify_pk
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=8 SANITIZE_SECONDS=400 timeout 410 bash $C/san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
(cd $C/base && timeout 330 bash ./run.sh > $W/tests-base.log 2>&1; echo "base tests rc $? $(el)s" >> $W/tests-base.log
 REQUIRE_GPU=1 timeout 120 ./tests/gpu_verify --test-threads=1 --nocapture gpu_verify_whole_row_blocks_skip_rows_past_a_rejection gpu_verify_row_groups_take_rows_in_turn > $W/skip-tests-nocapture.log 2>&1; echo "rc $?" >> $W/skip-tests-nocapture.log) &
(cd $C/rc2 && timeout 330 bash ./run.sh > $W/tests-rc2.log 2>&1; echo "rc2 tests rc $? $(el)s" >> $W/tests-rc2.log) &
cd $C/pk && timeout 330 bash ./run.sh > $W/tests-pk.log 2>&1; echo "pk tests rc $? $(el)s" >> $W/tests-pk.log
wait; for f in $W/tests-*.log; do echo "== $f"; tail -1 $f; grep -E "^==|test result|FAILED|panicked|mismatch|differ" $f | head -24; done
grep -E "^call|test result" $W/skip-tests-nocapture.log
echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
echo "elapsed $(el)"
