"""Imports FlashInfer's own cake-sampling Python from an unpacked flashinfer-python wheel
without running ``flashinfer/__init__.py`` (which imports every FlashInfer module and needs
packages the GPU machine does not have: cuda-tile, cutlass-dsl, nccl4py, ...).

Used twice (issue 6):
  * at build time (``build_cake.py``), to ask FlashInfer's real ``flashinfer/jit/cake_sampling.py``
    for its JIT spec (module name, binding source, nvcc flags, include paths), with no torch and
    no GPU;
  * on the GPU machine (``cake_peer.py``), to import FlashInfer's real
    ``flashinfer/cake_sampling.py`` (host-side planning and dispatch) and hand it the module that
    was compiled here, so it never tries to compile.

Only the few modules that the two files import and that would drag in the rest of FlashInfer are
replaced by stand-ins (flashinfer, flashinfer.jit: bare packages; flashinfer.jit.core / env /
utils / cpp_ext: the handful of names cake uses; flashinfer.fi_trace: an empty trace registry;
flashinfer.sampling: ``get_seed_and_offset``,
which the peer never reaches because it passes Philox seed and offset explicitly). Every other
module (cake_sampling, jit.cake_sampling, compilation_context, api_logging, version) is
FlashInfer's own file, loaded from the wheel. No FlashInfer code is copied here.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
import types
from pathlib import Path

# What the GPU machine needs from the wheel (python side): the two cake files and what they
# import for real. Paths relative to the wheel root.
PY_FILES = (
    "flashinfer/cake_sampling.py",
    "flashinfer/jit/cake_sampling.py",
    "flashinfer/compilation_context.py",
    "flashinfer/api_logging.py",
    "flashinfer/version.py",
    "flashinfer/_build_meta.py",
)
MANIFEST = "flashinfer/data/csrc/cake_sampling/generated/manifest.json"
# The architectures the module is built for (FlashInfer's own variable; "9.0" becomes
# compute_90a / sm_90a in its CompilationContext).
DEFAULT_ARCH_LIST = "9.0"


def _package(name: str, path: Path) -> types.ModuleType:
    mod = types.ModuleType(name)
    mod.__path__ = [str(path)]
    mod.__package__ = name
    sys.modules[name] = mod
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, mod)
    return mod


def _module(name: str, **attrs) -> types.ModuleType:
    mod = types.ModuleType(name)
    mod.__dict__.update(attrs)
    sys.modules[name] = mod
    parent, _, child = name.rpartition(".")
    setattr(sys.modules[parent], child, mod)
    return mod


def _write_if_different(path: Path, content: str) -> None:
    path = Path(path)
    if path.exists() and path.read_text() == content:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)


class SpecRecord:
    """What FlashInfer's ``gen_jit_spec`` was asked for (build time only)."""

    def __init__(self, name, sources, **kwargs):
        self.name = name
        self.sources = [Path(s) for s in sources]
        self.kwargs = kwargs

    def build_and_load(self):
        raise RuntimeError(
            "cake_shim: this process has no prebuilt cake module (FlashInfer would JIT-compile "
            "it here; the peer never does)"
        )


def install(wheel_root: Path, gen_dir: Path | None = None, cuda_home: str | None = None):
    """Registers the stand-ins. ``wheel_root`` holds ``flashinfer/`` (the python files above and
    ``data/csrc/cake_sampling``). ``gen_dir`` receives the generated binding source at build time.
    Returns the list of SpecRecords that ``gen_jit_spec`` receives."""
    wheel_root = Path(wheel_root).resolve()
    fi = wheel_root / "flashinfer"
    os.environ.setdefault("FLASHINFER_CUDA_ARCH_LIST", DEFAULT_ARCH_LIST)
    for name in [m for m in sys.modules if m == "flashinfer" or m.startswith("flashinfer.")]:
        del sys.modules[name]
    _package("flashinfer", fi)
    _package("flashinfer.jit", fi / "jit")
    records: list[SpecRecord] = []

    def gen_jit_spec(name, sources, **kwargs):
        rec = SpecRecord(name, sources, **kwargs)
        records.append(rec)
        return rec

    _module(
        "flashinfer.jit.core",
        JitSpec=SpecRecord,
        gen_jit_spec=gen_jit_spec,
        logger=logging.getLogger("flashinfer.jit"),
    )
    _module(
        "flashinfer.jit.env",
        FLASHINFER_CSRC_DIR=fi / "data" / "csrc",
        FLASHINFER_INCLUDE_DIR=fi / "data" / "include",
        FLASHINFER_GEN_SRC_DIR=Path(gen_dir) if gen_dir else wheel_root / "generated",
        CUTLASS_INCLUDE_DIRS=[],
    )
    _module("flashinfer.jit.utils", write_if_different=_write_if_different)
    if cuda_home is not None:
        # compilation_context asks nvcc whether it knows compute_107 (build time only).
        def is_cuda_version_at_least(version: str) -> bool:
            return True  # the pinned nvcc is 13.0

        _module(
            "flashinfer.jit.cpp_ext",
            get_cuda_path=lambda: cuda_home,
            is_cuda_version_at_least=is_cuda_version_at_least,
        )

    def get_seed_and_offset(*_args, **_kwargs):
        raise RuntimeError("cake_shim: pass philox_seed and philox_offset explicitly")

    def fallback(*_args, **_kwargs):
        raise RuntimeError(
            "cake_shim: this request would take FlashInfer's top_k_first fallback, which is not "
            "built here (check cake_sampling_route first)"
        )

    # api_logging looks its trace specs up here; none are registered, so the decorated cake
    # functions stay FlashInfer's plain functions (as with FLASHINFER_LOGLEVEL=0 there).
    _module("flashinfer.fi_trace", _REGISTRY={}, build_fi_trace_fn=None)
    _module(
        "flashinfer.sampling",
        get_seed_and_offset=get_seed_and_offset,
        top_k_top_p_sampling_from_probs=fallback,
    )
    return records


def fake_torch() -> None:
    """Build time without PyTorch: compilation_context imports torch but, with
    FLASHINFER_CUDA_ARCH_LIST set, never uses it."""
    try:
        import torch  # noqa: F401
    except ImportError:
        sys.modules["torch"] = types.ModuleType("torch")


def _preload_cudart() -> None:
    """The module needs libcudart.so.13; PyTorch cu130 has normally loaded it already (then
    this finds it by name), else it is taken from an nvidia-cuda-runtime package on sys.path."""
    import ctypes

    try:
        ctypes.CDLL("libcudart.so.13", mode=ctypes.RTLD_GLOBAL)
        return
    except OSError:
        pass
    for base in sys.path:
        for rel in ("nvidia/cu13/lib/libcudart.so.13", "nvidia/cuda_runtime/lib/libcudart.so.13"):
            cand = Path(base or ".") / rel
            if cand.exists():
                ctypes.CDLL(str(cand), mode=ctypes.RTLD_GLOBAL)
                return


def load_prebuilt(payload: Path):
    """GPU machine: imports flashinfer.cake_sampling from ``payload/py`` and binds the module
    compiled by build_cake.py (``payload/lib/<name>.so``), loaded through tvm-ffi from
    ``payload/site``. Returns (cake_sampling module, module info dict)."""
    import json

    payload = Path(payload).resolve()
    info = json.loads((payload / "cake-build.json").read_text())
    os.environ["FLASHINFER_CUDA_ARCH_LIST"] = info["arch_list"]
    site = str(payload / "site")
    if site not in sys.path:
        sys.path.insert(0, site)
    import tvm_ffi

    install(payload / "py")
    jit_cake = importlib.import_module("flashinfer.jit.cake_sampling")
    so = payload / "lib" / info["so"]
    _preload_cudart()
    module = tvm_ffi.load_module(str(so))
    jit_cake._LOADED["module"] = module
    cake = importlib.import_module("flashinfer.cake_sampling")
    info["tvm_ffi_version"] = getattr(tvm_ffi, "__version__", "?")
    return cake, info
