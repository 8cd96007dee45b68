# Picks the build for the grid: merged (b) if its tests passed and it is faster than firstx
# (bf) over the A/B cells (geometric mean < 1, no cell above 1.03), else firstx.
import json, math, os, sys
d, tests_ok = sys.argv[1], sys.argv[2] == "0"
def load(v):
    out = {}
    for i in (1, 2):
        p = os.path.join(d, f"{v}-{i}", "sonic-bench.json")
        if not os.path.exists(p): continue
        j = json.load(open(p)); rows = j.get("results", j.get("rows", []))
        for r in rows:
            out.setdefault((r["workload"], r["dtype"], r["vocab"], r["batch"]), []).append(r["median_us"])
    return {k: sum(v) / len(v) for k, v in out.items()}
m, f = load("merged"), load("firstx")
ratios = [m[k] / f[k] for k in m if k in f]
g = math.exp(sum(math.log(r) for r in ratios) / len(ratios)) if ratios else 9
pick = "b" if tests_ok and g < 1.0 and max(ratios) < 1.03 else "bf"
print(f"tests_ok {tests_ok} geomean merged/firstx {g:.4f} max {max(ratios) if ratios else 0:.3f} -> {pick}")
open(os.path.join(d, "..", "pick.txt"), "w").write(pick + "\n")
