#!/usr/bin/env bash
# Runs the sonic sampler's GPU work on a machine with a GPU and no Rust toolchain.
#   ./run.sh            GPU tests (REQUIRE_GPU=1: a missing GPU fails), ends with "N passed, N failed"
#   ./run.sh bench [--quick] [--out DIR]   the benchmark
#   ./run.sh soak [--quick] [--seconds N] [--replays N] [--check-every K] [--out DIR]   the soak run
#   ./run.sh peers [--quick] --out FILE    the PyTorch peers on the same shapes (needs python3 + torch)
#   ./run.sh flashinfer --out FILE [--quick]  FlashInfer's kernels on the same shapes (bundles built
#                       with SONIC_FLASHINFER=1 only; needs just the NVIDIA driver)
#   ./run.sh sanitize   the GPU tests under compute-sanitizer (memcheck, racecheck, initcheck, synccheck)
#   ./run.sh profile WORKLOAD:DTYPE:V:B OUTDIR   Nsight Compute on the sampler's kernels for one
#                       benchmark cell: OUTDIR/<cell>.ncu-rep and OUTDIR/<cell>-summary.txt
set -u
here="$(cd "$(dirname "$0")" && pwd)"
export REQUIRE_GPU=1

run_tests() {
  local wrap=("$@") passed=0 failed=0 t out p f
  for t in "$here"/tests/*; do
    echo "== ${wrap[*]:-} $(basename "$t")"
    out=$("${wrap[@]}" "$t" --test-threads=1 2>&1)
    local rc=$?
    echo "$out"
    p=$(echo "$out" | sed -n 's/^test result: .* \([0-9][0-9]*\) passed; \([0-9][0-9]*\) failed.*/\1/p' | tail -1)
    f=$(echo "$out" | sed -n 's/^test result: .* \([0-9][0-9]*\) passed; \([0-9][0-9]*\) failed.*/\2/p' | tail -1)
    if [ -z "$p" ]; then p=0; f=1; fi          # crashed before libtest's summary
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi  # e.g. a sanitizer error exit
    passed=$((passed + p)); failed=$((failed + f))
  done
  echo "${passed} passed, ${failed} failed"
  [ "$failed" -eq 0 ]
}

case "${1:-test}" in
  test) run_tests ;;
  bench) shift; exec "$here/sonic-bench" "$@" ;;
  soak) shift; exec "$here/sonic-soak" "$@" ;;
  peers) shift; exec python3 "$here/peers/torch_peers.py" "$@" ;;
  flashinfer)
    shift
    if [ ! -x "$here/peers/flashinfer_peers" ]; then
      echo "this bundle has no FlashInfer harness; rebuild it with SONIC_FLASHINFER=1 cargo xtask bundle"; exit 2
    fi
    exec "$here/peers/flashinfer_peers" "$@" ;;
  profile)
    cell="${2:?usage: run.sh profile WORKLOAD:DTYPE:V:B OUTDIR}"; out="${3:?usage: run.sh profile WORKLOAD:DTYPE:V:B OUTDIR}"
    mkdir -p "$out"; name=$(echo "$cell" | tr ':' '-')
    # Skip the warm-up replays; profile the kernels of one step (four for the sampler, two for
    # top-k, so count by step rather than kernels). Clocks stay as found.
    ncu --clock-control none --graph-profiling node -k "regex:sample_|topk_" --launch-skip 40 --launch-count 4 \
        --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
        -f -o "$out/$name" "$here/sonic-bench" --only "$cell" --replays 100 --out "$out/bench-$name" >/dev/null || exit 1
    ncu --import "$out/$name.ncu-rep" --page details > "$out/$name-details.txt" || exit 1
    grep -E "^  [a-z_]+ \(|Duration|DRAM Throughput|Achieved Occupancy|Registers Per Thread|Dynamic Shared Memory Per Block" \
        "$out/$name-details.txt" > "$out/$name-summary.txt"
    cat "$out/$name-summary.txt" ;;
  sanitize)
    rc=0
    for tool in memcheck racecheck initcheck synccheck; do
      run_tests compute-sanitizer --tool "$tool" --error-exitcode 1 || rc=1
    done
    exit $rc ;;
  *) echo "usage: run.sh [test|bench|soak|peers|flashinfer|sanitize|profile]"; exit 2 ;;
esac
