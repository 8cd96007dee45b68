#!/usr/bin/env bash
# Run 6 (session 16): replays and eager steps of greedy rows alone skip the exact pass (its
# graph nodes disabled). Every GPU test on it; an A/B of base (b3b2c36) and new, two rounds;
# then, if the tests passed and no cell is more than 2% slower, compute-sanitizer and the soak.
W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run6.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in tests/*.gz *.gz; do gunzip -f $f; done; chmod +x tests/* sonic-bench sonic-soak base-bench run.sh
nvidia-smi --query-gpu=name,driver_version --format=csv > $W/gpu.txt
timeout 200 ./run.sh > $W/tests.log 2>&1; rc=$?; echo "tests rc $rc"; tail -1 $W/tests.log; grep -E "FAILED|panicked|mismatch" $W/tests.log | head -6
CELLS="greedy:f32:128256:1,greedy:bf16:32000:1,greedy:f32:151936:8,greedy:f32:128256:64,greedy:f32:128256:256,greedy:f32:151936:1024,topk50_topp09_t07:f32:128256:1,heterogeneous:f32:128256:8,flat_topp095:f32:128256:1,random_full:f32:128256:1"
for i in 1 2; do
  for v in base new; do
    bin=./sonic-bench; [ $v = base ] && bin=./base-bench
    timeout 60 $bin --only "$CELLS" --out $W/ab/$v-$i > $W/ab-$v-$i.log 2>&1; echo "ab $v $i rc $?"
  done
done
python3 - $W/ab $rc <<'PY' | tee $W/decide.txt
import json, math, os, sys
d, ok = sys.argv[1], sys.argv[2] == "0"
def load(v):
    out = {}
    for i in (1, 2):
        p = os.path.join(d, f"{v}-{i}", "sonic-bench.json")
        if os.path.exists(p):
            for r in json.load(open(p)).get("results", []):
                out.setdefault((r["workload"], r["dtype"], r["vocab"], r["batch"]), []).append(r["median_us"])
    return {k: sum(v) / len(v) for k, v in out.items()}
b, n = load("base"), load("new")
r = {k: n[k] / b[k] for k in n if k in b}
for k in sorted(r): print(k, f"{b[k]:.1f} {n[k]:.1f} {r[k]:.3f}")
keep = ok and r and max(r.values()) < 1.02
print("keep" if keep else "drop")
PY
if grep -q '^keep' $W/decide.txt; then
  SANITIZE_SECONDS=230 timeout 250 ./run.sh sanitize $W/sanitizer > $W/sanitize-stdout.log 2>&1; echo "sanitize rc $?"; tail -3 $W/sanitizer/summary.txt
  timeout 70 ./run.sh soak --seconds 40 --out $W/soak > $W/soak.log 2>&1; echo "soak rc $?"; tail -2 $W/soak.log
fi
