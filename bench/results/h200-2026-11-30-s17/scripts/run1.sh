#!/usr/bin/env bash
# Run 1 (session 17): fused multiply-adds in the weights and shared reductions for the band
# sums (e31b7cd, "new") against session 16's final build (34fb9a2, "base"). Every GPU test on
# new; an A/B of both, two rounds, alternating; Nsight summaries of heterogeneous V = 151936,
# B = 256 for both; source counters of new's sample_tiles_mass there.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run1.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in tests/*.gz *.gz; do gunzip -f $f; done; chmod +x tests/* sonic-bench sonic-soak base-bench run.sh
mkdir -p ../bb && cp run.sh ../bb/ && cp base-bench ../bb/sonic-bench
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
timeout 260 ./run.sh > $W/tests.log 2>&1; rc=$?; echo "tests rc $rc"; tail -1 $W/tests.log; grep -E "FAILED|panicked|mismatch" $W/tests.log | head -6
CELLS="greedy:f32:128256:1,topk50_topp09_t07:f32:128256:64,random_full:f32:128256:1,random_full:f32:128256:256,random_full:f32:151936:1024,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,peaked_topp095:f32:151936:256,heterogeneous:f32:151936:8,heterogeneous:f32:151936:64,heterogeneous:f32:151936:256,heterogeneous:bf16:128256:1024,verify_hetero:f32:128256:32,verify_uniform:f32:151936:128"
for i in 1 2; do
  for v in base new; do
    bin=./sonic-bench; [ $v = base ] && bin=./base-bench
    timeout 90 $bin --only "$CELLS" --out $W/ab/$v-$i > $W/ab-$v-$i.log 2>&1; echo "ab $v $i rc $?"
  done
done
python3 - $W/ab <<'PY' | tee $W/ab-table.txt
import json, os, sys
d = sys.argv[1]
def load(v):
    out = {}
    for i in (1, 2):
        p = os.path.join(d, f"{v}-{i}", "sonic-bench.json")
        if os.path.exists(p):
            for r in json.load(open(p)).get("results", []):
                out.setdefault((r["workload"], r["dtype"], r["vocab"], r["batch"]), []).append(r["median_us"])
    return {k: sum(v) / len(v) for k, v in out.items()}
b, n = load("base"), load("new")
for k in sorted(n):
    if k in b: print(*k, f"{b[k]:.2f} {n[k]:.2f} {n[k]/b[k]:.3f}")
PY
timeout 90 ./run.sh profile heterogeneous:f32:151936:256 $W/prof-new > $W/prof-new.log 2>&1; echo "prof new rc $?"
timeout 90 ../bb/run.sh profile heterogeneous:f32:151936:256 $W/prof-base > $W/prof-base.log 2>&1; echo "prof base rc $?"
grep -E "^  [a-z_]+ \(|Duration" $W/prof-new/*-summary.txt | paste - - | awk '{print $1, $(NF)}'
[ $(( $(date +%s) - START )) -lt 420 ] && { timeout 100 ./run.sh profile-source heterogeneous:f32:151936:256 sample_tiles_mass $W/src > $W/src.log 2>&1; echo "src rc $?"; }
rm -f $W/prof-*/*.ncu-rep
