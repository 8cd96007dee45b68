#!/usr/bin/env bash
# Run 1 (session 19): stage-2 helpers out of line (new1: u128 scan, sort, block reductions,
# stage 2's once-a-row weights; new2: new1 plus merge_top32 out of line in stage 1) against
# 2176133 (base). Every GPU test on new2 (includes the greedy test's changed B = 1 case); A/B,
# two rounds, alternating; source counters of sample_rows (one random row) and sample_tiles.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run1.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in tests/*.gz *.gz; do gunzip -f $f; done; chmod +x tests/* *-bench sonic-soak run.sh; cp new2-bench sonic-bench
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
timeout 200 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $?"; tail -1 $W/tests.log; grep -E "FAILED|panicked|mismatch|differ|test result" $W/tests.log | head -12
CELLS="greedy:f32:128256:1,topk50_topp09_t07:f32:128256:1,topk50_topp09_t07:f32:128256:64,topk50_topp09_t07:f32:128256:1024,topk50_topp09_t07:bf16:151936:1,random_full:f32:128256:1,random_full:f32:128256:64,peaked_topp095:f32:128256:1,flat_topp095:f32:128256:1,heterogeneous:f32:128256:1,heterogeneous:f32:151936:64,heterogeneous:f32:151936:256,heterogeneous:f32:128256:1024"
for i in 1 2; do
  for v in base new1 new2; do
    timeout 60 ./$v-bench --only "$CELLS" --out $W/ab/$v-$i > $W/ab-$v-$i.log 2>&1; echo "ab $v $i rc $? $(( $(date +%s) - START ))s"
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
b, n1, n2 = load("base"), load("new1"), load("new2")
print("| workload | dtype | V | B | base µs | new1 µs | new2 µs | new1/base | new2/base |")
print("|---|---|---|---|---|---|---|---|---|")
for k in sorted(b):
    if k in n1 and k in n2: print(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {b[k]:.2f} | {n1[k]:.2f} | {n2[k]:.2f} | {n1[k]/b[k]:.3f} | {n2[k]/b[k]:.3f} |")
PY
export NCU_EXTRA="--warp-sampling-interval 0"
for ck in topk50_topp09_t07:f32:128256:1:sample_rows random_full:f32:128256:1:sample_rows topk50_topp09_t07:f32:128256:1:sample_tiles; do
  cell=${ck%:*}; k=${ck##*:}
  timeout 80 bash ./run.sh profile-source $cell $k $W/src > $W/log-$k-${cell//:/-}.txt 2>&1; echo "src $ck rc $? $(( $(date +%s) - START ))s"
done
echo "elapsed $(( $(date +%s) - START ))"
