#!/usr/bin/env bash
# Next device session, call 2 of 2 (written in session 60; not yet run). The same .carry/ as
# next-run-1.sh. An A/B of base, rc2, pk and base with --warm-l2 over 19 cells (three rounds;
# flat_topp095 against flat_full in the three cells of the exact pass's 2× target that session
# 57's grid put at 2.01–2.03×, where one grid's noise decides),
# then Nsight durations of every kernel of two cells that no grid breaks down: heterogeneous
# f32 V = 128256 B = 64 (the mixed-batch bandwidth target of issue 4) and flat_topp095 f32
# V = 128256 B = 64 (the exact pass at 2.03× the fast path, against 2×).
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run2.tar.gz -C $W .' EXIT
. "$PWD/bench/candidates/carry-unpack.sh"
CELLS="topk50_topp09_t07:f32:128256:1,topk50_topp09_t07:f32:128256:64,random_full:f32:128256:1,random_full:f32:128256:256,flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_full:f32:128256:64,flat_topp095:f32:151936:64,flat_full:f32:151936:64,flat_topp095:f32:151936:256,flat_full:f32:151936:256,heterogeneous:f32:128256:8,verify_hetero:f32:128256:1,verify_hetero:f32:128256:8,verify_hetero:f32:128256:32,verify_hetero:f32:151936:8,verify_uniform:f32:128256:8,verify_sampled:f32:128256:8,verify_accepted:f32:128256:8"
cd $C/base; AB_SECONDS=140 timeout 420 bash ./run.sh ab $W/ab "$CELLS" 3 base=$C/base/sonic-bench rc2=$C/rc2/sonic-bench pk=$C/pk/sonic-bench "warm=$C/base/sonic-bench --warm-l2" > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
for cell in heterogeneous:f32:128256:64 flat_topp095:f32:128256:64; do
  timeout 75 bash ./run.sh profile $cell $W/profile > $W/profile-$(echo $cell | tr ':' '-').log 2>&1; echo "profile $cell rc $? $(el)s"
done
rm -f $W/profile/*.ncu-rep; cat $W/profile/*-summary.txt
echo "elapsed $(el)"
