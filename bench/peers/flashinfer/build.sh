#!/usr/bin/env bash
# Builds bench/peers/flashinfer/harness.cu against FlashInfer's C++ headers, for sm_90.
#   build.sh OUT_BINARY [CACHE_DIR]
# FlashInfer's sources are fetched from PyPI at build time (pinned in fetch.sh) into CACHE_DIR
# (default: <repo>/.flashinfer, git-ignored) and never committed. The CUDA 13.0 compiler,
# runtime and cuRAND headers come pinned from PyPI into the same cache, so the build needs
# python3 + pip + a host g++, and no CUDA install. cudart is linked statically: the binary
# needs only the NVIDIA driver (and glibc) on the GPU machine; libstdc++ is static too.
set -euo pipefail

ARCH=${SONIC_FLASHINFER_ARCH:-sm_90}

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
out="${1:?usage: build.sh OUT_BINARY [CACHE_DIR]}"
cache="${2:-$root/.flashinfer}"
mkdir -p "$cache"
py=${PYTHON:-python3}

source "$here/fetch.sh"

# Only the header API and FlashInfer's vendored CCCL (its JIT puts these first with -I).
src="$cache/flashinfer-$FLASHINFER_VERSION"
if [ ! -f "$src/.unpacked" ]; then
  echo "flashinfer: unpacking headers into $src"
  rm -rf "$src"
  "$py" - "$wheel" "$src" <<'PY'
import sys, zipfile
wheel, dest = sys.argv[1:]
keep = ("flashinfer/data/include/", "flashinfer/data/cccl/cub/", "flashinfer/data/cccl/thrust/",
        "flashinfer/data/cccl/libcudacxx/include/")
with zipfile.ZipFile(wheel) as z:
    z.extractall(dest, [n for n in z.namelist() if n.startswith(keep)])
PY
  touch "$src/.unpacked"
fi

data="$src/flashinfer/data"
mkdir -p "$(dirname "$out")"
echo "flashinfer: nvcc $("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p') -arch=$ARCH -> $out"
"$nvcc" -arch="$ARCH" -O3 -std=c++17 --expt-relaxed-constexpr -static-global-template-stub=false \
  -ccbin "${CXX:-g++}" \
  -I"$data/cccl/cub" -I"$data/cccl/libcudacxx/include" -I"$data/cccl/thrust" \
  -I"$data/include" -I"$cu/include" -L"$cu/lib" \
  -DFLASHINFER_VERSION_STR="\"$FLASHINFER_VERSION\"" \
  -cudart static -Xcompiler=-static-libstdc++,-static-libgcc -Xlinker -s \
  -o "$out" "$here/harness.cu"
ls -l "$out"
