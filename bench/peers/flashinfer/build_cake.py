"""Builds FlashInfer's cake-sampling module ahead of time, on a machine without a GPU (issue 6).

    build_cake.py --wheel FLASHINFER_WHEEL --tvm-ffi-wheel TVM_FFI_CP312_WHEEL \
                  --cuda CU13_DIR --work DIR --out PAYLOAD_DIR

FlashInfer 0.7.2 JIT-compiles ``flashinfer.cake_sampling``'s kernels on first use (one
translation unit of about 50 MB of generated CUDA, minutes of nvcc). The GPU machine has
little time and no FlashInfer, so this script asks FlashInfer's own JIT spec
(``flashinfer/jit/cake_sampling.py``, imported through cake_shim.py) for the module name, the
binding source, the nvcc flags and the include paths, compiles it here with the pinned nvcc
into the shared object FlashInfer's JIT would produce, and writes a small payload:

    PAYLOAD/lib/<module>.so          the compiled module (tvm-ffi functions radix_topk,
                                     sparse_topp_sample), sm_90a
    PAYLOAD/lib/libsonic_fi_softmax.so  softmax_shim.cu: FlashInfer's OnlineSoftmax (header API)
    PAYLOAD/py/flashinfer/...        FlashInfer's python files cake needs (cake_shim.PY_FILES)
                                     and the kernels' manifest.json
    PAYLOAD/site/tvm_ffi/...         apache-tvm-ffi (cp312) without its headers and sources
    PAYLOAD/cake-build.json          module name, flags, compiler, compile time

Nothing here is committed: the wheel and the payload live in git-ignored folders.
The compile of the object is skipped when WORK already holds one built by the same command.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import cake_shim  # noqa: E402

# From the wheel, for the build: the cake sources, the binding's helper header, FlashInfer's
# headers and its vendored CCCL (which its JIT puts first with -I).
BUILD_PREFIXES = (
    "flashinfer/data/csrc/cake_sampling/",
    "flashinfer/data/csrc/tvm_ffi_utils.h",
    "flashinfer/data/include/",
    "flashinfer/data/cccl/cub/",
    "flashinfer/data/cccl/thrust/",
    "flashinfer/data/cccl/libcudacxx/include/",
)
CCCL_DIRS = ("cccl/cub", "cccl/libcudacxx/include", "cccl/thrust")
# gen_jit_spec's defaults for a non-debug build (FlashInfer 0.7.2 flashinfer/jit/core.py) and
# build_cuda_cflags' fixed flags (flashinfer/jit/cpp_ext.py); use_fast_math is off for cake.
JIT_DEFAULT_FLAGS = (
    "-std=c++17",
    "--threads=1",
    "-Xfatbin=-compress-all",
    "--compress-mode=size",
    "-DFLASHINFER_ENABLE_F16",
    "-DFLASHINFER_ENABLE_BF16",
    "-DFLASHINFER_ENABLE_FP8_E4M3",
    "-DFLASHINFER_ENABLE_FP8_E5M2",
    "-DNDEBUG",
    "-O3",
    "--compiler-options=-fPIC",
    "--expt-relaxed-constexpr",
    "-static-global-template-stub=false",
    "-D_GLIBCXX_USE_CXX11_ABI=1",
)
SOFTMAX_SO = "libsonic_fi_softmax.so"
# tvm_ffi files the GPU machine does not need: headers and sources (its python subpackages and
# both libraries stay: core.so needs lib/libtvm_ffi_testing.so too).
TVM_FFI_DROP = ("include/", "src/", "3rdparty/", "cython/", "share/", "CMakeLists.txt")


def log(msg: str) -> None:
    print(f"cake: {msg}", flush=True)


def unpack(wheel: Path, dest: Path, prefixes) -> None:
    stamp = dest / ".unpacked"
    key = f"{wheel.name} {sorted(prefixes)}"
    if stamp.exists() and stamp.read_text() == key:
        return
    log(f"unpacking {wheel.name} into {dest}")
    shutil.rmtree(dest, ignore_errors=True)
    with zipfile.ZipFile(wheel) as z:
        z.extractall(dest, [n for n in z.namelist() if n.startswith(tuple(prefixes))])
    stamp.write_text(key)


def compile_once(cmd: list[str], obj: Path, what: str) -> float:
    """Runs nvcc ``cmd`` unless ``obj`` was already built by the same command; seconds taken."""
    key = hashlib.sha256(json.dumps(cmd).encode()).hexdigest()
    stamp = obj.with_suffix(".cmd")
    if obj.exists() and stamp.exists() and json.loads(stamp.read_text())["key"] == key:
        seconds = json.loads(stamp.read_text())["seconds"]
        log(f"{obj.name} up to date (compiled in {seconds:.0f} s)")
        return seconds
    logfile = obj.with_suffix(".log")
    log(f"compiling {what} (nvcc's output, thousands of unused-variable warnings for the "
        f"generated kernels, goes to {logfile})")
    log(" ".join(cmd))
    t0 = time.monotonic()
    with open(logfile, "w") as f:
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode
    seconds = time.monotonic() - t0
    if rc != 0:
        tail = logfile.read_text(errors="replace").splitlines()[-40:]
        raise SystemExit("\n".join(tail) + f"\ncake: nvcc failed (exit {rc}) on {what}; log {logfile}")
    stamp.write_text(json.dumps({"key": key, "seconds": seconds}))
    log(f"compiled {what} in {seconds:.0f} s")
    return seconds


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--wheel", type=Path, required=True)
    ap.add_argument("--tvm-ffi-wheel", type=Path, required=True)
    ap.add_argument("--cuda", type=Path, required=True, help="nvidia/cu13 of the pinned toolchain")
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--arch-list", default=cake_shim.DEFAULT_ARCH_LIST)
    ap.add_argument("--cxx", default=os.environ.get("CXX", "g++"))
    ap.add_argument("--split-compile", type=int, default=0,
                    help="nvcc --split-compile N (0: off)")
    args = ap.parse_args()
    work = args.work.resolve()
    cu = args.cuda.resolve()
    nvcc = cu / "bin" / "nvcc"

    src = work / "flashinfer-src"
    unpack(args.wheel, src, BUILD_PREFIXES + cake_shim.PY_FILES)
    tvm = work / "tvm-ffi"
    unpack(args.tvm_ffi_wheel, tvm, ("tvm_ffi/", "apache_tvm_ffi"))

    # FlashInfer's own JIT spec, asked without torch or a GPU.
    os.environ["FLASHINFER_CUDA_ARCH_LIST"] = args.arch_list
    cake_shim.fake_torch()
    gen = work / "generated"
    records = cake_shim.install(src, gen_dir=gen, cuda_home=str(cu))
    import importlib

    jit_cake = importlib.import_module("flashinfer.jit.cake_sampling")
    jit_cake.gen_cake_sampling_module()
    (spec,) = records
    binding = spec.sources[0]
    extra = list(spec.kwargs.get("extra_cuda_cflags") or [])
    includes = [Path(p).resolve() for p in spec.kwargs.get("extra_include_paths") or []]
    if spec.kwargs.get("use_fast_math", True):
        extra.insert(0, "-use_fast_math")
    log(f"module {spec.name}, targets {jit_cake.supported_capabilities()}, flags {extra}")

    data = src / "flashinfer" / "data"
    cflags = list(JIT_DEFAULT_FLAGS)
    cflags += [f"-I{p}" for p in includes]
    cflags += [f"-I{data / d}" for d in CCCL_DIRS]
    cflags += ["-isystem", str(cu / "include"),
               "-isystem", str(tvm / "tvm_ffi" / "include"),
               "-isystem", str(tvm / "tvm_ffi" / "3rdparty" / "dlpack" / "include")]
    cflags += extra
    if args.split_compile:
        cflags.append(f"--split-compile={args.split_compile}")
    obj = work / f"{spec.name}.cuda.o"
    cmd = [str(nvcc), "-ccbin", args.cxx, *cflags, "-c", str(binding), "-o", str(obj)]
    compile_s = compile_once(cmd, obj, f"{binding.name} (+ "
                             f"{len(jit_cake.load_manifest()['source_files'])} generated parts)")

    # FlashInfer's OnlineSoftmax (what flashinfer.sampling.softmax runs on sm_90) for the
    # softmax + cake figure: our shim over the header API, same flags, same target.
    shim_obj = work / "softmax_shim.cuda.o"
    shim_flags = [f for f in cflags if not f.startswith("-I")] + [
        f"-I{data / 'include'}", *[f"-I{data / d}" for d in CCCL_DIRS]]
    compile_once([str(nvcc), "-ccbin", args.cxx, *shim_flags, "-c", str(HERE / "softmax_shim.cu"),
                  "-o", str(shim_obj)], shim_obj, "softmax_shim.cu")

    # The link rule of FlashInfer's ninja file ($cxx $in -shared -L... -lcudart -lcuda). The
    # module calls no driver API, so libcuda is left out; libcudart.so.13 is the one PyTorch
    # (cu130) has already loaded when the peer loads this module.
    out = args.out.resolve()
    shutil.rmtree(out, ignore_errors=True)
    (out / "lib").mkdir(parents=True)
    so = out / "lib" / f"{spec.name}.so"
    link = [args.cxx, str(obj), "-shared", "-s", f"-L{cu / 'lib'}", "-l:libcudart.so.13",
            "-o", str(so)]
    subprocess.run(link, check=True)
    subprocess.run([args.cxx, str(shim_obj), "-shared", "-s", f"-L{cu / 'lib'}",
                    "-l:libcudart.so.13", "-o", str(out / "lib" / SOFTMAX_SO)], check=True)

    for rel in cake_shim.PY_FILES + (cake_shim.MANIFEST,):
        dst = out / "py" / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src / rel, dst)
    shutil.copytree(tvm / "tvm_ffi", out / "site" / "tvm_ffi",
                    ignore=lambda d, names: [n for n in names
                                             if any((Path(d) / n).relative_to(tvm / "tvm_ffi")
                                                    .as_posix().startswith(x.rstrip("/"))
                                                    for x in TVM_FFI_DROP)
                                             or n == "__pycache__"])
    for dist in tvm.glob("apache_tvm_ffi-*.dist-info"):
        shutil.copytree(dist, out / "site" / dist.name)
    version = subprocess.run([str(nvcc), "--version"], capture_output=True, text=True).stdout
    info = {
        "flashinfer_version": "0.7.2",
        "wheel": args.wheel.name,
        "tvm_ffi_wheel": args.tvm_ffi_wheel.name,
        "module": spec.name,
        "so": so.name,
        "softmax_so": SOFTMAX_SO,
        "arch_list": args.arch_list,
        "targets": [list(t) for t in jit_cake.supported_capabilities()],
        "nvcc": version.strip().splitlines()[-1],
        "nvcc_flags": [f for f in cflags if not f.startswith(("-I", "/"))
                       and f != "-isystem"],
        "compile_seconds": round(compile_s, 1),
        "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (out / "cake-build.json").write_text(json.dumps(info, indent=1) + "\n")
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    log(f"payload {out}: {size / 2**20:.1f} MiB ({so.stat().st_size / 2**20:.1f} MiB module)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
