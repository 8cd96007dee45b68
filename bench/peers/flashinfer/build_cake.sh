#!/usr/bin/env bash
# Builds FlashInfer's cake-sampling module (flashinfer.cake_sampling, 0.7.2) ahead of time, for
# sm_90a, and packs the payload that bench/peers/cake_peer.py runs on the GPU machine.
#   build_cake.sh PAYLOAD.tar.gz [CACHE_DIR]
# The payload (CACHE_DIR/cake-payload, ~9 MB; ~4 MB packed) is described in build_cake.py;
# `run.sh cake` unpacks it next to itself before running the peer.
# Same pinned wheel and CUDA 13.0 toolchain as build.sh (fetch.sh), plus apache-tvm-ffi (the
# binding library FlashInfer's JIT modules use; the GPU machine's image lacks it) as a cp312
# manylinux wheel. All of it is fetched from PyPI into CACHE_DIR (default <repo>/.flashinfer,
# git-ignored); nothing of FlashInfer is committed. build_cake.py does the work; the first
# build compiles ~50 MB of generated CUDA (tens of minutes on 2 cores), later ones reuse the
# object in CACHE_DIR/cake-work. nice'd: it shares the machine with other builds.
set -euo pipefail

TVM_FFI_VERSION=0.1.15.post2   # flashinfer-python 0.7.2 asks for apache-tvm-ffi >=0.1.11,<0.2
ARCH_LIST=${SONIC_FLASHINFER_CAKE_ARCH:-9.0}   # FlashInfer's arch-list form: 9.0 -> sm_90a

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
tarball="${1:?usage: build_cake.sh PAYLOAD.tar.gz [CACHE_DIR]}"
cache="${2:-$root/.flashinfer}"
mkdir -p "$cache"
py=${PYTHON:-python3}

source "$here/fetch.sh"

tvm_wheel=$(ls "$cache/wheels"/apache_tvm_ffi-"$TVM_FFI_VERSION"-cp312-*.whl 2>/dev/null | head -1 || true)
if [ -z "$tvm_wheel" ]; then
  echo "flashinfer: downloading apache-tvm-ffi==$TVM_FFI_VERSION (cp312, manylinux) from PyPI"
  "$py" -m pip download --no-deps --only-binary=:all: --implementation cp --python-version 3.12 \
    --platform manylinux_2_28_x86_64 "apache-tvm-ffi==$TVM_FFI_VERSION" -d "$cache/wheels"
  tvm_wheel=$(ls "$cache/wheels"/apache_tvm_ffi-"$TVM_FFI_VERSION"-cp312-*.whl | head -1)
fi

nice -n 10 "$py" "$here/build_cake.py" --wheel "$wheel" --tvm-ffi-wheel "$tvm_wheel" \
  --cuda "$cu" --work "$cache/cake-work" --out "$cache/cake-payload" --arch-list "$ARCH_LIST"
mkdir -p "$(dirname "$tarball")"
tar czf "$tarball" -C "$cache/cake-payload" .
ls -l "$tarball"
