"""PyTorch peer baselines for the sonic sampler benchmark.

What: times the token-selection paths a serving engine falls back to when it has
no fused sampling kernel, on the same LLM-like logits the Rust benchmark
(`sonic-bench`) uses, and writes them in the shared results schema so that
`cargo xtask plot --in DIR` can put them next to sonic's numbers:

  torch.argmax              greedy              argmax over the row
  torch.topk                topk128             top-128 values and indices
  torch.sort_topk_topp      topk50_topp09_t07   vLLM-style sort fallback: /0.7, sort,
                                                top-k 50, softmax, cumsum, top-p 0.9,
                                                renormalise, exponential-race sample
  torch.softmax_multinomial random_full         softmax + multinomial over the full row

Why: sonic's speedup claims are only meaningful against what people run today.
Every call is timed with triton.testing.do_bench, which zeroes a 256 MB buffer
before each call so nothing is served from L2, and reports median/p10/p90.
The sort fallback converts to f32 first (as vLLM's sampler does), so for bf16
input that conversion is part of the timed work.

Usage: python3 torch_peers.py --out peers.json [--quick]
         [--vocabs 32000,128256,151936,262144] [--batches 1,8,64,256,1024] [--dtypes f32,bf16]
"""
import argparse
import datetime
import inspect
import json

import torch
import triton.testing

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}


def make_logits(batch, vocab, dtype, seed=1234):
    """N(0, std 2) plus ~20 tokens per row boosted by +8..+14: peaked like real LLM logits."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(batch, vocab, device="cuda", generator=g) * 2.0
    idx = torch.randint(0, vocab, (batch, 20), device="cuda", generator=g)
    boost = 8.0 + 6.0 * torch.rand(batch, 20, device="cuda", generator=g)
    x.scatter_add_(1, idx, boost)
    return x.to(dtype)


def sort_topk_topp_sample(logits, k=50, p=0.9, temperature=0.7):
    """The sort-based top-k/top-p fallback of serving engines, as one function."""
    x = logits.float() / temperature
    vals, idx = torch.sort(x, dim=-1, descending=True)
    vals[:, k:] = float("-inf")  # top-k
    probs = vals.softmax(dim=-1)
    # top-p: drop tokens whose preceding mass already reaches p (keeps the crossing token)
    mass_before = probs.cumsum(dim=-1) - probs
    probs = probs.masked_fill(mass_before >= p, 0.0)
    probs = probs / probs.sum(dim=-1, keepdim=True)
    # exponential race: argmax(p_i / E_i) with E_i ~ Exp(1) is a sample from probs
    choice = (probs / torch.empty_like(probs).exponential_()).argmax(dim=-1, keepdim=True)
    return idx.gather(-1, choice).squeeze(-1)


def softmax_multinomial(logits):
    return torch.multinomial(logits.float().softmax(dim=-1), 1).squeeze(-1)


PEERS = [  # (impl, workload, callable on logits)
    ("torch.argmax", "greedy", lambda x: torch.argmax(x, dim=-1)),
    ("torch.topk", "topk128", lambda x: torch.topk(x, 128, dim=-1)),
    ("torch.sort_topk_topp", "topk50_topp09_t07", sort_topk_topp_sample),
    ("torch.softmax_multinomial", "random_full", softmax_multinomial),
]

HAS_QUANTILES = "quantiles" in inspect.signature(triton.testing.do_bench).parameters


def time_us(fn):
    """(median, p10, p90) in microseconds; do_bench flushes L2 before every call."""
    if HAS_QUANTILES:
        ms = triton.testing.do_bench(fn, warmup=25, rep=100, quantiles=[0.5, 0.1, 0.9])
        return tuple(v * 1e3 for v in ms)
    return own_loop_us(fn)


def own_loop_us(fn, reps=100):
    """Fallback: CUDA events around each call only, a 256 MB zero-fill before each."""
    flush = torch.empty(64 * 1024 * 1024, dtype=torch.int32, device="cuda")
    for _ in range(10):
        fn()
    times = []
    for _ in range(reps):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    t = torch.tensor(times)
    return tuple(torch.quantile(t, torch.tensor(q)).item() for q in (0.5, 0.1, 0.9))


def result(impl, workload, dtype, batch, vocab, nbytes, times=None, note=""):
    med, p10, p90 = times if times else (None, None, None)
    return {"impl": impl, "workload": workload, "dtype": dtype, "batch": batch, "vocab": vocab,
            "median_us": med, "p10_us": p10, "p90_us": p90, "bytes": nbytes,
            "gb_per_s": nbytes / (med * 1e3) if med else None, "copy_fraction": None, "note": note}


def measure_shape(vocab, batch, dtype_name):
    dtype = DTYPES[dtype_name]
    nbytes = batch * vocab * torch.finfo(dtype).bits // 8
    out = []
    try:
        logits = make_logits(batch, vocab, dtype)
    except Exception as e:  # out of memory, or anything else: record and skip the shape
        oom = isinstance(e, torch.cuda.OutOfMemoryError)
        note = ("skipped: out of memory making logits" if oom else f"error making logits: {e!r}")[:300]
        return [result(i, w, dtype_name, batch, vocab, nbytes, note=note) for i, w, _ in PEERS]
    for impl, workload, fn in PEERS:
        try:
            times = time_us(lambda: fn(logits))
            out.append(result(impl, workload, dtype_name, batch, vocab, nbytes, times))
        except torch.cuda.OutOfMemoryError as e:
            out.append(result(impl, workload, dtype_name, batch, vocab, nbytes, note=f"skipped: out of memory: {e}"[:300]))
        except Exception as e:  # record and keep going
            out.append(result(impl, workload, dtype_name, batch, vocab, nbytes, note=f"error: {e!r}"[:300]))
        torch.cuda.empty_cache()
    del logits
    torch.cuda.empty_cache()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="JSON file to write")
    ap.add_argument("--quick", action="store_true", help="vocab 128256, batches 1,64, f32")
    ap.add_argument("--vocabs", default="32000,128256,151936,262144")
    ap.add_argument("--batches", default="1,8,64,256,1024")
    ap.add_argument("--dtypes", default="f32,bf16")
    a = ap.parse_args()
    if a.quick:
        a.vocabs, a.batches, a.dtypes = "128256", "1,64", "f32"
    vocabs = [int(v) for v in a.vocabs.split(",")]
    batches = [int(b) for b in a.batches.split(",")]
    dtypes = a.dtypes.split(",")
    if not torch.cuda.is_available():
        ap.error("needs a CUDA GPU (torch.cuda.is_available() is False)")
    for d in dtypes:
        if d not in DTYPES:
            ap.error(f"unknown dtype {d!r}; known: {', '.join(DTYPES)}")

    doc = {"producer": "torch-peers", "device": torch.cuda.get_device_name(),
           "date": datetime.date.today().isoformat(),
           "torch": torch.__version__, "timer": "do_bench" if HAS_QUANTILES else "own-loop",
           "results": []}
    for vocab in vocabs:
        for batch in batches:
            for d in dtypes:
                doc["results"] += measure_shape(vocab, batch, d)
                with open(a.out, "w") as f:  # rewrite after every shape: a crash keeps what ran
                    json.dump(doc, f, indent=1)
                print(f"vocab {vocab} batch {batch} {d}: done", flush=True)

    print(f"\n{'impl':<27}{'workload':<19}{'dtype':<6}{'batch':>6}{'vocab':>8}"
          f"{'median us':>11}{'p10':>9}{'p90':>9}{'GB/s':>8}  note")
    for r in doc["results"]:
        fmt = lambda v, w, prec=1: f"{v:{w}.{prec}f}" if v is not None else "-".rjust(w)
        print(f"{r['impl']:<27}{r['workload']:<19}{r['dtype']:<6}{r['batch']:>6}{r['vocab']:>8}"
              f"{fmt(r['median_us'], 11)}{fmt(r['p10_us'], 9)}{fmt(r['p90_us'], 9)}"
              f"{fmt(r['gb_per_s'], 8, 0)}  {r['note']}")
    print(f"\nwrote {a.out}")


if __name__ == "__main__":
    main()
