#!/usr/bin/env bash
# Run 5 (session 18): greedy steps as their own kernel, sample_tiles_greedy, and their own graph
# ("new"; sample_tiles as before), against session 17's final build ("base", 8a883b3's kernels).
# Every GPU test on new; an A/B, two rounds, alternating; the whole grid on new; Nsight on a
# greedy B = 1 step (one launch).
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run5.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in tests/*.gz *.gz; do gunzip -f $f; done; chmod +x tests/* sonic-bench sonic-soak base-bench run.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
timeout 200 ./run.sh > $W/tests.log 2>&1; echo "tests rc $?"; tail -1 $W/tests.log; grep -E "FAILED|panicked|mismatch|differ" $W/tests.log | head -8
CELLS="greedy:f32:128256:1,greedy:f32:128256:64,greedy:f32:128256:1024,greedy:bf16:128256:1,greedy:f32:32000:8,topk50_topp09_t07:f32:128256:1,topk50_topp09_t07:f32:128256:64,topk50_topp09_t07:f32:151936:1,topk50_topp09_t07:f32:32000:256,topk128:f32:128256:1,random_full:f32:128256:1,heterogeneous:f32:151936:1,heterogeneous:f32:151936:64,heterogeneous:f32:151936:1024"
for i in 1 2; do
  for v in base new; do
    case $v in base) bin=./base-bench ;; new) bin=./sonic-bench ;; esac
    timeout 90 $bin --only "$CELLS" --out $W/ab/$v-$i > $W/ab-$v-$i.log 2>&1; echo "ab $v $i rc $?"
  done
done
python3 - $W/ab <<'PY' | tee $W/ab-table.txt
import json, math, os, sys
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
print("| workload | dtype | V | B | base µs | new µs | new/base |")
print("|---|---|---|---|---|---|---|")
for k in sorted(n):
    if k in b: print(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {b[k]:.2f} | {n[k]:.2f} | {n[k]/b[k]:.3f} |")
PY
timeout 240 ./run.sh bench --out $W/grid > $W/bench-stdout.log 2>&1; echo "bench rc $?"; tail -2 $W/bench-stdout.log
timeout 60 ./run.sh profile greedy:f32:128256:1 $W/prof > /dev/null 2>&1; echo "prof rc $?"; rm -f $W/prof/*.ncu-rep; grep -E "^  [a-z]|Duration" $W/prof/*-summary.txt
echo "elapsed $(( $(date +%s) - START ))"
