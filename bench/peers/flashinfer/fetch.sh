# Sourced by build.sh and build_cake.sh (needs $cache and $py): fetches the pinned
# flashinfer-python wheel and the pinned CUDA 13.0 toolchain from PyPI into $cache (git-ignored),
# once, and sets $FLASHINFER_VERSION, $wheel, $cu (nvidia/cu13) and $nvcc.
FLASHINFER_VERSION=0.7.2
CUDA_PINS=(nvidia-cuda-nvcc==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-nvvm==13.0.88
           nvidia-cuda-runtime==13.0.96 nvidia-curand==10.4.0.35)

wheel="$cache/wheels/flashinfer_python-$FLASHINFER_VERSION-py3-none-any.whl"
if [ ! -f "$wheel" ]; then
  echo "flashinfer: downloading flashinfer-python==$FLASHINFER_VERSION from PyPI"
  "$py" -m pip download --no-deps --only-binary=:all: "flashinfer-python==$FLASHINFER_VERSION" -d "$cache/wheels"
fi

cuda="$cache/cuda-13.0"
pins="${CUDA_PINS[*]}"
if [ "$(cat "$cuda/.pins" 2>/dev/null)" != "$pins" ]; then
  echo "flashinfer: installing the CUDA 13.0 toolchain from PyPI into $cuda ($pins)"
  rm -rf "$cuda"
  "$py" -m pip install --quiet --no-deps --target "$cuda" "${CUDA_PINS[@]}"
  echo "$pins" > "$cuda/.pins"
fi
cu="$cuda/nvidia/cu13"
nvcc="$cu/bin/nvcc"
