#!/usr/bin/env bash
# Session 61, call 5: run 4's bundle (`head`, .carry/head/), no code change. An A/B of the
# landed launch choices against the bench's other ways of launching the exact pass, and against
# a warm L2, on the exact pass's cells and mixed steps: whether the choices session 16 and 26
# measured still hold for today's kernels, and how much of these cells is cold caches.
#   base: the defaults (exact pass by settings, its first kernel after stage 2 in stream order)
#   overlapped / serial: --exact-order (every exact-pass kernel overlapped / none)
#   one: --exact-pass one (the whole exact pass as `exact_tail`)
#   warm: --warm-l2 (no L2 flush before a replay)
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run5.tar.gz -C $W .' EXIT
. "$PWD/bench/candidates/carry-unpack.sh"
md5sum */sonic-bench > $W/md5.txt
B=$C/head/sonic-bench
CELLS="flat_topp095:f32:128256:1,flat_full:f32:128256:1,flat_topp095:f32:128256:64,flat_full:f32:128256:64,flat_topp095:f32:151936:256,flat_full:f32:151936:256,heterogeneous:f32:128256:8,heterogeneous:f32:128256:64,topk50_topp09_t07:f32:128256:64"
cd $C/head; AB_SECONDS=60 timeout 300 bash ./run.sh ab $W/ab "$CELLS" 2 base=$B "overlapped=$B --exact-order overlapped" "serial=$B --exact-order serial" "one=$B --exact-pass one" "warm=$B --warm-l2" > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
echo "elapsed $(el)"
