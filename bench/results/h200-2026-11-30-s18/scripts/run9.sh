#!/usr/bin/env bash
# Run 9 (session 18): sample_rows (the one-block-per-SM build) sorts lists of up to 256 keys in
# warp 0 alone, bar.warp.sync between stages ("new"), against run 7's build ("base", dcb4448).
# A/B, two rounds, alternating; the GPU sampler and reliability tests; racecheck over the
# mixed-batch test (reduced sizes).
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run9.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in tests/*.gz *.gz; do gunzip -f $f; done; chmod +x tests/* sonic-bench base-bench run.sh
CELLS="topk50_topp09_t07:f32:128256:1,topk50_topp09_t07:f32:128256:64,topk50_topp09_t07:bf16:151936:1,topk50_topp09_t07:f32:32000:256,heterogeneous:f32:151936:1,heterogeneous:f32:151936:64,random_full:f32:128256:1,peaked_topp095:f32:128256:1"
for i in 1 2; do
  for v in base new; do
    case $v in base) bin=./base-bench ;; new) bin=./sonic-bench ;; esac
    timeout 40 $bin --only "$CELLS" --out $W/ab/$v-$i > $W/ab-$v-$i.log 2>&1; echo "ab $v $i rc $?"
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
for t in gpu_sampler gpu_reliability; do
  REQUIRE_GPU=1 timeout 80 ./tests/$t --test-threads=1 > $W/test-$t.log 2>&1; echo "test $t rc $?"; grep "test result" $W/test-$t.log
done
left=$(( 215 - ($(date +%s) - START) )); echo "racecheck budget $left s"
if [ $left -gt 15 ]; then
  (SONIC_SANITIZE=1 REQUIRE_GPU=1 timeout $left compute-sanitizer --tool racecheck --error-exitcode 1 ./tests/gpu_sampler --test-threads=1 gpu_tokens_equal_reference_on_mixed_batches > $W/racecheck-mixed.log 2>&1); echo "racecheck rc $?"; tail -3 $W/racecheck-mixed.log
fi
echo "elapsed $(( $(date +%s) - START ))"
