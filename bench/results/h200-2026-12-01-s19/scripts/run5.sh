#!/usr/bin/env bash
# Run 5 (session 19): vg = vf (0ba0a2b) plus verification's once-a-row weights (the binned
# decision's and the prefix masses') through sampler::key_weight: verify_rows loses its 944 B
# of spills. Every GPU test on vg; A/B of base (2176133), vf and vg, two rounds, alternating;
# the whole grid on vg.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run5.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in tests/*.gz *.gz; do gunzip -f $f; done; chmod +x tests/* *-bench sonic-soak run.sh; cp vg-bench sonic-bench
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
timeout 220 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "FAILED|panicked|mismatch|differ" $W/tests.log | head -8
CELLS="topk50_topp09_t07:f32:128256:1,random_full:f32:128256:1,flat_topp095:f32:128256:1,heterogeneous:f32:151936:64,verify_hetero:f32:128256:1,verify_hetero:f32:128256:8,verify_hetero:f32:128256:32,verify_hetero:f32:128256:128,verify_hetero:f32:151936:1,verify_hetero:f32:151936:8,verify_hetero:f32:151936:32,verify_hetero:f32:151936:128,verify_uniform:f32:128256:8,verify_uniform:f32:128256:128,verify_accepted:f32:128256:8,verify_accept70:f32:128256:8,verify_sampled:f32:128256:8,verify_sampled:f32:128256:128"
for i in 1 2; do
  for v in base vf vg; do
    timeout 60 ./$v-bench --only "$CELLS" --out $W/ab/$v-$i > $W/ab-$v-$i.log 2>&1; echo "ab $v $i rc $? $(( $(date +%s) - START ))s"
  done
done
python3 - $W/ab <<'PY' | tee $W/ab-table.txt
import json, os, sys
d = sys.argv[1]
vs = ["base", "vf", "vg"]
def load(v):
    out = {}
    for i in (1, 2):
        p = os.path.join(d, f"{v}-{i}", "sonic-bench.json")
        if os.path.exists(p):
            for r in json.load(open(p)).get("results", []):
                out.setdefault((r["workload"], r["dtype"], r["vocab"], r["batch"]), []).append(r["median_us"])
    return {k: sum(v) / len(v) for k, v in out.items()}
m = {v: load(v) for v in vs}
print("| workload | dtype | V | B | base µs | " + " | ".join(f"{v} µs" for v in vs[1:]) + " | " + " | ".join(f"{v}/base" for v in vs[1:]) + " | vg/vf |")
print("|---|---|---|---|---|" + "---|" * (2 * (len(vs) - 1) + 1))
for k in sorted(m["base"]):
    if all(k in m[v] for v in vs):
        print(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {m['base'][k]:.2f} | " + " | ".join(f"{m[v][k]:.2f}" for v in vs[1:]) + " | " + " | ".join(f"{m[v][k]/m['base'][k]:.3f}" for v in vs[1:]) + f" | {m['vg'][k]/m['vf'][k]:.3f} |")
PY
left=$(( 560 - ($(date +%s) - START) )); echo "grid budget $left s"
timeout $left bash ./run.sh bench --out $W/grid > $W/bench-stdout.log 2>&1; echo "bench rc $?"; tail -1 $W/bench-stdout.log
echo "elapsed $(( $(date +%s) - START ))"
