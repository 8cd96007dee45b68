#!/usr/bin/env bash
# Run 2 (session 19): stage 2 with fewer barriers and less cold code, four builds against
# 2176133 (base): va = stage 2's once-a-row weights through one out-of-line function;
# vb = lists of up to 256 keys sorted by rank (two barriers) instead of bitonically;
# vc = va + vb; vd = vc + the u128 block scan out of line. A/B, two rounds, alternating;
# source counters of vc's sample_rows for one top-k 50 + top-p row and one heterogeneous row.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run2.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in *.gz; do gunzip -f $f; done; chmod +x *-bench run.sh; cp vc-bench sonic-bench
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
CELLS="greedy:f32:128256:1,topk50_topp09_t07:f32:128256:1,topk50_topp09_t07:f32:128256:64,topk50_topp09_t07:f32:128256:1024,topk50_topp09_t07:bf16:151936:1,topk50_topp09_t07:f32:32000:256,random_full:f32:128256:1,random_full:f32:128256:64,random_full:f32:151936:256,peaked_topp095:f32:128256:1,flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,heterogeneous:f32:128256:1,heterogeneous:f32:151936:1,heterogeneous:f32:151936:64,heterogeneous:f32:151936:256,heterogeneous:f32:128256:1024"
for i in 1 2; do
  for v in base va vb vc vd; do
    timeout 60 ./$v-bench --only "$CELLS" --out $W/ab/$v-$i > $W/ab-$v-$i.log 2>&1; echo "ab $v $i rc $? $(( $(date +%s) - START ))s"
  done
done
python3 - $W/ab <<'PY' | tee $W/ab-table.txt
import json, os, sys
d = sys.argv[1]
vs = ["base", "va", "vb", "vc", "vd"]
def load(v):
    out = {}
    for i in (1, 2):
        p = os.path.join(d, f"{v}-{i}", "sonic-bench.json")
        if os.path.exists(p):
            for r in json.load(open(p)).get("results", []):
                out.setdefault((r["workload"], r["dtype"], r["vocab"], r["batch"]), []).append(r["median_us"])
    return {k: sum(v) / len(v) for k, v in out.items()}
m = {v: load(v) for v in vs}
print("| workload | dtype | V | B | base µs | " + " | ".join(f"{v}/base" for v in vs[1:]) + " |")
print("|---|---|---|---|---|" + "---|" * (len(vs) - 1))
for k in sorted(m["base"]):
    if all(k in m[v] for v in vs):
        print(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {m['base'][k]:.2f} | " + " | ".join(f"{m[v][k]/m['base'][k]:.3f}" for v in vs[1:]) + " |")
PY
export NCU_EXTRA="--warp-sampling-interval 0"
for ck in topk50_topp09_t07:f32:128256:1:sample_rows heterogeneous:f32:128256:1:sample_rows; do
  cell=${ck%:*}; k=${ck##*:}
  timeout 60 bash ./run.sh profile-source $cell $k $W/src > $W/log-$k-${cell//:/-}.txt 2>&1; echo "src $ck rc $? $(( $(date +%s) - START ))s"
done
echo "elapsed $(( $(date +%s) - START ))"
