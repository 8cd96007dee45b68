"""FlashInfer 0.7.2 "cake" sampling as a peer of the sonic sampler benchmark (issue 6).

What: times flashinfer.cake_sampling.top_k_top_p_sampling_from_probs (thread-block-cluster
radix top-k -> sparse top-p -> inverse-CDF sample; FlashInfer's fastest sampling path on
Hopper) on the topk50_topp09_t07 workload (T 0.7, top-k 50, top-p 0.9, f32), on the same
LLM-like logits as torch_peers.py, and writes the shared results schema (cake-peers.json):

  flashinfer.softmax+cake_sampling        logits in: FlashInfer's OnlineSoftmax with T 0.7 inside
                                          (what flashinfer.sampling.softmax runs on sm_90; 1 MB
                                          workspace, PDL on, as its Python default) then cake;
                                          both timed. The headline peer.
  flashinfer.cake_sampling                probabilities in: cake alone (the anchors' figure)
  ... .eager                              the same, launched from Python each call (FlashInfer's
                                          host-side planning and tvm-ffi dispatch included)

The two without .eager are timed as CUDA-graph replays (capture of the same calls), so host
overhead is out, as in sonic-bench. Timer: triton.testing.do_bench, which zeroes a 256 MB
buffer before every call (cold L2) and reports median/p10/p90 (own CUDA-event loop with the
same flush where do_bench has no quantiles).

Why: cake takes probabilities; a sampler that takes logits must be compared with cake plus the
softmax FlashInfer itself uses to get them. Our ratio against "OnlineSoftmax + cake" is the
headline number.

Nothing is compiled here: the payload (bench/peers/flashinfer/build_cake.py, built on a machine
without a GPU) holds the module FlashInfer's JIT would build, FlashInfer's own python for cake,
the OnlineSoftmax shim and apache-tvm-ffi. cake_shim.py imports FlashInfer's real
flashinfer/cake_sampling.py (planning and dispatch unchanged) and hands it that module.

Check: after timing, every row's sampled token must be inside the row's top-50 nucleus (top-p
0.9 of the renormalized top-50 probabilities, with a small tolerance at the boundary), for the
graph's draw and for a few fresh draws with other Philox offsets; failures go into the row's
"check" field and the top-level "check_failures", and the script exits 1.

Usage: python3 cake_peer.py --payload cake.tar.gz|DIR --out cake-peers.json [--quick]
         [--vocabs 32000,128256,151936,262144] [--batches 1,8,64,256,1024] [--no-anchors]
"""
import argparse
import ctypes
import datetime
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
K, P, T = 50, 0.9, 0.7
WORKLOAD = "topk50_topp09_t07"
SEED, OFFSET = 0x5EED, 0
SOFTMAX_WS_BYTES = 1 << 20  # flashinfer.sampling.softmax's cached workspace
# The shapes of ../shared/anchors/h200-baselines.md (cake, graph replay, f32).
ANCHORS = [(131072, 1), (131072, 64), (262144, 256), (262144, 1024)]


def import_helpers():
    """cake_shim.py sits next to this file in the bundle, in bench/peers/flashinfer/ in the
    repository; make_logits comes from torch_peers.py (same inputs as the other peers)."""
    for d in (HERE, HERE / "flashinfer"):
        if (d / "cake_shim.py").exists():
            sys.path.insert(0, str(d))
    sys.path.insert(0, str(HERE))
    import cake_shim
    from torch_peers import make_logits, time_us, HAS_QUANTILES
    return cake_shim, make_logits, time_us, HAS_QUANTILES


def unpack(payload: Path) -> Path:
    """A tarball is unpacked into a fresh temporary folder; a folder is used as it is."""
    if payload.is_dir():
        return payload
    import tarfile
    import tempfile
    dest = Path(tempfile.mkdtemp(prefix="sonic-cake-"))
    with tarfile.open(payload) as t:
        if hasattr(tarfile, "data_filter"):
            t.extractall(dest, filter="data")
        else:
            t.extractall(dest)
    return dest


class Softmax:
    """FlashInfer's OnlineSoftmax (payload/lib/libsonic_fi_softmax.so) on torch tensors."""

    def __init__(self, lib_path, torch):
        self.torch = torch
        self.lib = ctypes.CDLL(str(lib_path))
        f = self.lib.sonic_fi_online_softmax
        f.restype = ctypes.c_int
        f.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint32,
                      ctypes.c_float, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                      ctypes.c_void_p]
        self.lib.sonic_fi_error_string.restype = ctypes.c_char_p
        self.ws = torch.empty(SOFTMAX_WS_BYTES, dtype=torch.uint8, device="cuda")

    def __call__(self, logits, probs, temperature, pdl=True):
        b, v = logits.shape
        stream = self.torch.cuda.current_stream().cuda_stream
        rc = self.lib.sonic_fi_online_softmax(logits.data_ptr(), probs.data_ptr(), b, v,
                                              temperature, self.ws.data_ptr(), SOFTMAX_WS_BYTES,
                                              1 if pdl else 0, stream)
        if rc != 0:
            raise RuntimeError(f"OnlineSoftmax: {self.lib.sonic_fi_error_string(rc).decode()}")


def graph_of(torch, fn):
    """A CUDA graph of fn (warmed up on a side stream first, as PyTorch asks)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    torch.cuda.synchronize()
    return g


def check_tokens(torch, probs, tokens):
    """Rows whose token is outside the top-k/top-p support: top-50 of the row, then the
    shortest prefix (descending) whose mass reaches p of the top-50 mass. A token counts as
    inside when the mass strictly before it is below p * mass(top-50) (+1e-5 relative slack
    for float rounding at the boundary). Returns (bad row count, first bad rows)."""
    vals, idx = torch.topk(probs, K, dim=-1)  # descending
    tok = tokens.long().unsqueeze(-1)
    pos = (idx == tok).float().argmax(dim=-1)
    inside_k = (idx == tok).any(dim=-1)
    before = vals.double().cumsum(dim=-1) - vals.double()
    mass_before = before.gather(-1, pos.unsqueeze(-1)).squeeze(-1)
    total = vals.double().sum(dim=-1)
    inside_p = mass_before < P * total * (1 + 1e-5)
    ok = inside_k & inside_p
    bad = (~ok).nonzero().flatten().tolist()
    return len(bad), bad[:5]


def result(impl, batch, vocab, times=None, note="", check=None):
    med, p10, p90 = times if times else (None, None, None)
    nbytes = batch * vocab * 4
    r = {"impl": impl, "workload": WORKLOAD, "dtype": "f32", "batch": batch, "vocab": vocab,
         "median_us": med, "p10_us": p10, "p90_us": p90, "bytes": nbytes,
         "gb_per_s": nbytes / (med * 1e3) if med else None, "copy_fraction": None, "note": note}
    if check is not None:
        r["check"] = check
    return r


def measure_shape(ctx, vocab, batch, anchor):
    torch, cake, softmax, make_logits, time_us = (ctx[k] for k in
                                                  ("torch", "cake", "softmax", "make_logits",
                                                   "time_us"))
    impls = ["flashinfer.softmax+cake_sampling", "flashinfer.cake_sampling",
             "flashinfer.softmax+cake_sampling.eager", "flashinfer.cake_sampling.eager"]
    tag = " (anchor shape)" if anchor else ""
    try:
        logits = make_logits(batch, vocab, torch.float32)
        probs = torch.empty_like(logits)   # cake alone: fixed probabilities
        probs2 = torch.empty_like(logits)  # softmax + cake: written by the timed softmax
        softmax(logits, probs, T)
        out = torch.empty(batch, dtype=torch.int32, device="cuda")
        ws = (torch.empty(batch, 1024, dtype=torch.float32, device="cuda"),
              torch.empty(batch, 1024, dtype=torch.int32, device="cuda"),
              torch.empty(batch, dtype=torch.int32, device="cuda"))
    except Exception as e:
        oom = isinstance(e, torch.cuda.OutOfMemoryError)
        note = ("skipped: out of memory" if oom else f"error making inputs: {e!r}")[:300]
        return [result(i, batch, vocab, note=note) for i in impls], 0
    route = cake.cake_sampling_route(probs, K)
    if route != "pipeline":
        note = f"not run: cake routes this shape to FlashInfer's fallback ({route})"
        return [result(i, batch, vocab, note=note) for i in impls], 0
    plan = cake._launch_plan(torch.cuda.current_device(), batch, vocab, K)
    plan_note = (f"cake plan: cluster {plan.cluster}, ept {plan.ept}, "
                 f"{'streaming' if plan.stream else 'register-resident'}, "
                 f"{'one launch' if plan.one_launch else 'two launches (PDL)'}")

    def cake_only(offset=OFFSET):
        cake.top_k_top_p_sampling_from_probs(probs, K, P, philox_seed=SEED, philox_offset=offset,
                                             out=out, workspace=ws, enable_pdl=True)

    def softmax_cake():
        softmax(logits, probs2, T)
        cake.top_k_top_p_sampling_from_probs(probs2, K, P, philox_seed=SEED,
                                             philox_offset=OFFSET, out=out, workspace=ws,
                                             enable_pdl=True)

    rows, failures = [], 0
    notes = {
        "flashinfer.softmax+cake_sampling": "OnlineSoftmax (T 0.7 inside, PDL) then cake "
                                            "top_k_top_p_sampling_from_probs (k 50, p 0.9); "
                                            "CUDA graph replay",
        "flashinfer.cake_sampling": "cake top_k_top_p_sampling_from_probs alone, probabilities "
                                    "in (k 50, p 0.9); CUDA graph replay",
        "flashinfer.softmax+cake_sampling.eager": "as flashinfer.softmax+cake_sampling, launched "
                                                  "from Python each call (host dispatch included)",
        "flashinfer.cake_sampling.eager": "as flashinfer.cake_sampling, launched from Python each "
                                          "call (host dispatch included)",
    }
    fns = {"flashinfer.softmax+cake_sampling": softmax_cake, "flashinfer.cake_sampling": cake_only}
    for impl in impls:
        base = impl.removesuffix(".eager")
        note = f"{notes[impl]}; {plan_note}{tag}"
        g = None
        try:
            if impl.endswith(".eager"):
                times = time_us(fns[base])
            else:
                g = graph_of(torch, fns[base])
                times = time_us(g.replay)
            torch.cuda.synchronize()
            # The check: the last draw of this impl, then fresh draws with other offsets.
            src = probs2 if base.startswith("flashinfer.softmax") else probs
            n_bad, first = check_tokens(torch, src, out)
            draws = 1
            if not impl.endswith(".eager") and base == "flashinfer.cake_sampling":
                for off in (4096, 8192, 12288):
                    cake_only(off)
                    b2, f2 = check_tokens(torch, probs, out)
                    n_bad, first, draws = n_bad + b2, first or f2, draws + 1
            check = (f"ok: {batch * draws} draws inside the top-50 / top-p 0.9 support" if n_bad == 0
                     else f"FAILED: {n_bad} of {batch * draws} draws outside the support "
                          f"(rows {first})")
            failures += n_bad > 0
            rows.append(result(impl, batch, vocab, times, note, check))
            del g
        except torch.cuda.OutOfMemoryError as e:
            rows.append(result(impl, batch, vocab, note=f"skipped: out of memory: {e}"[:300]))
        except Exception as e:  # record and keep going
            rows.append(result(impl, batch, vocab, note=f"error: {e!r}"[:300]))
        torch.cuda.synchronize()
    # The probabilities themselves: OnlineSoftmax must match torch.softmax(logits / T).
    ref = torch.softmax(logits / T, dim=-1)
    err = (probs - ref).abs().max().item()
    if not err < 1e-5:
        failures += 1
        for r in rows:
            r["check"] = r.get("check", "") + f"; OnlineSoftmax differs from torch by {err:.2e}"
    del logits, probs, probs2, ref
    torch.cuda.empty_cache()
    return rows, failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--payload", type=Path, default=HERE / "cake.tar.gz",
                    help="build_cake.sh's tarball, or the folder build_cake.py wrote "
                         "(default: cake.tar.gz next to this script, as in the bundle)")
    ap.add_argument("--out", required=True, help="JSON file to write")
    ap.add_argument("--quick", action="store_true", help="vocab 128256, batches 1,64, anchors off")
    ap.add_argument("--vocabs", default="32000,128256,151936,262144")
    ap.add_argument("--batches", default="1,8,64,256,1024")
    ap.add_argument("--no-anchors", action="store_true",
                    help="leave out the anchors file's shapes (V 131072 B 1, 64)")
    a = ap.parse_args()
    if a.quick:
        a.vocabs, a.batches, a.no_anchors = "128256", "1,64", True
    shapes = [(int(v), int(b)) for v in a.vocabs.split(",") for b in a.batches.split(",")]
    anchors = set() if a.no_anchors else set(ANCHORS)
    shapes += sorted(anchors - set(shapes))

    import torch
    if not torch.cuda.is_available():
        ap.error("needs a CUDA GPU (torch.cuda.is_available() is False)")
    # tvm-ffi would JIT-compile a DLPack helper for a torch without the C exchange API; the GPU
    # machine's time is scarce, and the graph-replay figures do not depend on it.
    dlpack_native = hasattr(torch.Tensor, "__dlpack_c_exchange_api__")
    if not dlpack_native:
        os.environ.setdefault("TVM_FFI_DISABLE_TORCH_C_DLPACK", "1")
    cake_shim, make_logits, time_us, has_quantiles = import_helpers()
    payload = unpack(a.payload)
    cake, info = cake_shim.load_prebuilt(payload)
    major, minor = torch.cuda.get_device_capability()
    if cake.supported_capability((major, minor)) is None:
        sys.exit(f"cake_peer: the payload is built for {info['targets']}, this GPU is "
                 f"{major}.{minor}; rebuild it with --arch-list {major}.{minor}")
    softmax = Softmax(payload / "lib" / info["softmax_so"], torch)
    ctx = {"torch": torch, "cake": cake, "softmax": softmax, "make_logits": make_logits,
           "time_us": time_us}

    doc = {"producer": "cake-peer", "device": torch.cuda.get_device_name(),
           "date": datetime.date.today().isoformat(), "torch": torch.__version__,
           "flashinfer": f"{info['flashinfer_version']} (cake_sampling, prebuilt: {info['nvcc']}, "
                         f"{info['module']})",
           "timer": ("do_bench" if has_quantiles else "own-loop") + ", L2 flushed before each call; "
                    "graph replay (host dispatch in the .eager rows)",
           "build": info, "tvm_ffi_torch_dlpack": "native" if dlpack_native else "disabled",
           "check_failures": 0, "results": []}
    for vocab, batch in shapes:
        rows, failures = measure_shape(ctx, vocab, batch, (vocab, batch) in anchors)
        doc["results"] += rows
        doc["check_failures"] += failures
        with open(a.out, "w") as f:  # rewrite after every shape: a crash keeps what ran
            json.dump(doc, f, indent=1)
        print(f"vocab {vocab} batch {batch}: done", flush=True)

    print(f"\n{'impl':<42}{'batch':>6}{'vocab':>8}{'median us':>11}{'p10':>9}{'p90':>9}  check")
    for r in doc["results"]:
        fmt = lambda v, w: f"{v:{w}.1f}" if v is not None else "-".rjust(w)
        print(f"{r['impl']:<42}{r['batch']:>6}{r['vocab']:>8}{fmt(r['median_us'], 11)}"
              f"{fmt(r['p10_us'], 9)}{fmt(r['p90_us'], 9)}  {r.get('check', r['note'])}")
    print(f"\nwrote {a.out}; check failures: {doc['check_failures']}")
    if doc["check_failures"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
