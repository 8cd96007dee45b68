#!/usr/bin/env bash
# Run 3 (session 19): the candidate builds against 2176133 (base): va = stage 2's once-a-row
# weights through one out-of-line function (run 2's va); vf = va plus the same for the split
# exact pass's finish (classify_once) and verification's draw walk (residual_once). Every GPU
# test on vf; A/B, two rounds, alternating, sampling and verification cells; the whole grid on vf.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run3.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in tests/*.gz *.gz; do gunzip -f $f; done; chmod +x tests/* *-bench sonic-soak run.sh; cp vf-bench sonic-bench
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
timeout 220 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "FAILED|panicked|mismatch|differ" $W/tests.log | head -8
CELLS="greedy:f32:128256:1,topk50_topp09_t07:f32:128256:1,topk50_topp09_t07:f32:128256:64,topk50_topp09_t07:f32:128256:1024,random_full:f32:128256:1,random_full:f32:128256:64,random_full:f32:151936:256,peaked_topp095:f32:128256:1,flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:151936:256,heterogeneous:f32:128256:1,heterogeneous:f32:151936:64,heterogeneous:f32:128256:1024,verify_hetero:f32:128256:1,verify_hetero:f32:128256:8,verify_hetero:f32:128256:128,verify_uniform:f32:128256:8,verify_sampled:f32:128256:8,verify_hetero:f32:151936:32"
for i in 1 2; do
  for v in base va vf; do
    timeout 60 ./$v-bench --only "$CELLS" --out $W/ab/$v-$i > $W/ab-$v-$i.log 2>&1; echo "ab $v $i rc $? $(( $(date +%s) - START ))s"
  done
done
python3 - $W/ab <<'PY' | tee $W/ab-table.txt
import json, os, sys
d = sys.argv[1]
vs = ["base", "va", "vf"]
def load(v):
    out = {}
    for i in (1, 2):
        p = os.path.join(d, f"{v}-{i}", "sonic-bench.json")
        if os.path.exists(p):
            for r in json.load(open(p)).get("results", []):
                out.setdefault((r["workload"], r["dtype"], r["vocab"], r["batch"]), []).append(r["median_us"])
    return {k: sum(v) / len(v) for k, v in out.items()}
m = {v: load(v) for v in vs}
print("| workload | dtype | V | B | base µs | " + " | ".join(f"{v} µs" for v in vs[1:]) + " | " + " | ".join(f"{v}/base" for v in vs[1:]) + " |")
print("|---|---|---|---|---|" + "---|" * (2 * (len(vs) - 1)))
for k in sorted(m["base"]):
    if all(k in m[v] for v in vs):
        print(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {m['base'][k]:.2f} | " + " | ".join(f"{m[v][k]:.2f}" for v in vs[1:]) + " | " + " | ".join(f"{m[v][k]/m['base'][k]:.3f}" for v in vs[1:]) + " |")
PY
left=$(( 560 - ($(date +%s) - START) )); echo "grid budget $left s"
timeout $left bash ./run.sh bench --out $W/grid > $W/bench-stdout.log 2>&1; echo "bench rc $?"; tail -2 $W/bench-stdout.log
echo "elapsed $(( $(date +%s) - START ))"
