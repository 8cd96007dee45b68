#!/usr/bin/env bash
# Run 2 (session 17): sample_tiles_mass hands out its own rows' items evenly (7ec9fe6, "new")
# against run 1's new (e31b7cd, "base"). Every GPU test on new; an A/B of both, two rounds,
# alternating; Nsight summaries of heterogeneous V = 151936, B = 64 and 256 on new.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run2.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
for f in tests/*.gz *.gz; do gunzip -f $f; done; chmod +x tests/* sonic-bench sonic-soak base-bench run.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
timeout 260 ./run.sh > $W/tests.log 2>&1; rc=$?; echo "tests rc $rc"; tail -1 $W/tests.log; grep -E "FAILED|panicked|mismatch" $W/tests.log | head -6
CELLS="greedy:f32:128256:1,greedy:f32:151936:1024,topk50_topp09_t07:f32:128256:64,topk50_topp09_t07:f32:128256:1024,random_full:f32:128256:1,random_full:f32:128256:256,random_full:f32:151936:1024,flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,heterogeneous:f32:151936:1,heterogeneous:f32:151936:8,heterogeneous:f32:151936:64,heterogeneous:f32:151936:256,heterogeneous:f32:151936:1024,heterogeneous:bf16:128256:1024"
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
for c in heterogeneous:f32:151936:256 heterogeneous:f32:151936:64; do
  timeout 90 ./run.sh profile $c $W/prof > $W/prof-$c.log 2>&1; echo "prof $c rc $?"
done
grep -E "^  [a-z_]+ \(|Duration|Achieved" $W/prof/*-summary.txt | paste - - - | awk '{print $1, $2, $(NF-4), $NF}'
rm -f $W/prof/*.ncu-rep
