#!/usr/bin/env bash
# The first device call of the next session with a GPU: session 63's host changes and the read
# candidates rr and hy, none of which has run on a GPU (session 63 had no device).
#
# Before the call, on the development machine, from the checkout's root:
#   bench/candidates/build-carry.sh s63=HEAD rr=HEAD:bench/candidates/rr-readback-raw-copies.diff \
#       --bench-only s62=26c6f14b rrhy=HEAD:bench/candidates/rr-readback-raw-copies.diff:bench/candidates/hy-one-array-pageable.diff
#   bench/candidates/park-results.sh park        # the tree must carry under 64 MiB
# then `run` with carry [".carry"] and the command `bash bench/candidates/next-run.sh`, and
# `park-results.sh restore` after it. The carries were 37 MB when session 63 built them; the
# A/B stops 520 s after the start, so the call ends within about 9 minutes.
#
# s62: main after session 62 (the last build tested on the H200). s63: main after session 63
# (reads into reused vectors, the upload's host half in PreparedRows, no host copy of counts).
# rr: s63 with the readback's copies made without cudarc's pinned-buffer events. rrhy: rr with
# one-array reads through pageable memory. PTX is the same in all four (3708d7b3).
# 1. s63's and rr's six test binaries, beside a 90 s soak of s63 (its reads reuse one vector for
#    the whole run);
# 2. alone on the GPU: an A/B of the four builds' steps, reads and (s63, rr, rrhy) uploads on
#    session 62's read cells and the heterogeneous B = 1024 cell, two rounds (AB_SECONDS bounds
#    each build's run at 50 s; how long they take has not been measured).
# Work outside $OUT, which returns at most 8 files: the one tarball comes back.
START=$(date +%s); W=/tmp/next-run-w; rm -rf "$W"; mkdir -p "$W"; trap 'tar czf $OUT/next-run.tar.gz -C $W .' EXIT
. "$PWD/bench/candidates/carry-unpack.sh"
cat */md5.txt > "$W/md5.txt"; cat */ptx.md5 >> "$W/md5.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$W/gpu.txt"
for b in s63 rr; do
  (cd "$C/$b"; for t in gpu_sampler gpu_topk gpu_infra; do REQUIRE_GPU=1 timeout 170 ./tests/$t --test-threads=2 > "$W/test-$b-$t.log" 2>&1; echo "$b $t rc $? $(el)s" >> "$W/test-$b-$t.log"; done) &
  (cd "$C/$b"; for t in gpu_verify gpu_validation gpu_reliability; do REQUIRE_GPU=1 timeout 170 ./tests/$t --test-threads=2 > "$W/test-$b-$t.log" 2>&1; echo "$b $t rc $? $(el)s" >> "$W/test-$b-$t.log"; done) &
done
(cd "$C/s63"; timeout 120 ./sonic-soak --seconds 90 --out "$W/soak" > "$W/soak.log" 2>&1; echo "soak rc $? $(el)s" >> "$W/soak.log") &
wait
for f in "$W"/test-*.log; do grep -E "test result|FAILED|panicked" "$f" | head -8; tail -1 "$f"; done
tail -28 "$W/soak.log"
cd "$C/s63"
CELLS="heterogeneous:f32:128256:1,heterogeneous:f32:128256:8,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,heterogeneous:f32:128256:1024,greedy:f32:128256:1,greedy:f32:128256:64,topk50_topp09_t07:f32:128256:64"
LEFT=$(( 520 - $(el) )); echo "ab budget $LEFT s"
# `timeout 0` would mean no limit: with too little time left the A/B is skipped.
if [ "$LEFT" -gt 30 ]; then
  AB_SECONDS=50 timeout $LEFT ./run.sh ab "$W/ab" "$CELLS" 2 "s62=$C/s62/sonic-bench" "s63=./sonic-bench" "rr=$C/rr/sonic-bench" "rrhy=$C/rrhy/sonic-bench" > "$W/ab.log" 2>&1
  echo "ab rc $? $(el)s"; cat "$W/ab/ab-table.txt"
fi
echo "elapsed $(el)"
