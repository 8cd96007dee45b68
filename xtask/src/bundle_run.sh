#!/usr/bin/env bash
# Runs the sonic sampler's GPU work on a machine with a GPU and no Rust toolchain.
#   ./run.sh            GPU tests (REQUIRE_GPU=1: a missing GPU fails), ends with "N passed, N failed"
#   ./run.sh bench [--quick] [--out DIR]   the benchmark
#   ./run.sh soak [--quick] [--seconds N] [--replays N] [--check-every K] [--exact-pass settings|one|four] [--out DIR]   the soak run
#   ./run.sh soak-start DIR [soak args]   the soak run in the background (setsid), so that it
#                       can outlive this command: DIR/soak.log, DIR/sonic-soak.json, DIR/soak.rc
#   ./run.sh soak-wait DIR [--timeout S]  waits (default 540 s) for that soak; prints its summary
#                       and exits with its status, or exits 3 if it is still running (call again)
#   ./run.sh peers [--quick] --out FILE    the PyTorch peers on the same shapes (needs python3 + torch)
#   ./run.sh flashinfer --out FILE [--quick]  FlashInfer's kernels on the same shapes (bundles built
#                       with SONIC_FLASHINFER=1 only; needs just the NVIDIA driver)
#   ./run.sh cake --out FILE [--quick]  FlashInfer's cake sampling (flashinfer.cake_sampling), alone
#                       and after FlashInfer's OnlineSoftmax, on the topk50_topp09_t07 shapes
#                       (bundles built with SONIC_FLASHINFER_CAKE=1 only; needs python3 + torch)
#   ./run.sh sanitize [OUTDIR]   every GPU test binary under compute-sanitizer memcheck, racecheck,
#                       initcheck and synccheck, at the tests' reduced sizes (SONIC_SANITIZE=1),
#                       jobs in parallel: OUTDIR/<tool>-<binary>.log and OUTDIR/summary.txt.
#                       SANITIZE_SECONDS (default 480) bounds the whole run, SANITIZE_JOBS
#                       (default 8) the jobs at once, SANITIZE_TOOLS picks tools.
#   ./run.sh profile WORKLOAD:DTYPE:V:B OUTDIR   Nsight Compute on the sampler's kernels for one
#                       benchmark cell: OUTDIR/<cell>.ncu-rep and OUTDIR/<cell>-summary.txt
#   ./run.sh profile-source WORKLOAD:DTYPE:V:B KERNEL OUTDIR   Nsight Compute's full set with
#                       source counters for one launch of KERNEL in that cell, packed as
#                       OUTDIR/<cell>-<kernel>.tar.gz (details page and per-SASS-instruction CSV):
#                       one file, because a device run returns only a few; NCU_EXTRA adds ncu
#                       options (a lone block's kernel needs --warp-sampling-interval 0 to be
#                       sampled every 32 cycles instead of a few dozen times in all)
#   ./run.sh ab OUTDIR CELLS ROUNDS NAME=BENCH...   an A/B of benchmark builds in one call: each
#                       of ROUNDS rounds runs every BENCH binary once over CELLS (sonic-bench's
#                       --only list), in the order given, so that the builds alternate; then
#                       OUTDIR/ab-table.txt: per cell, each build's mean of its rounds' medians,
#                       and its ratio to the first build's (below 1 is faster). Each run's JSON is
#                       OUTDIR/<name>-<round>/sonic-bench.json, its output OUTDIR/<name>-<round>.log;
#                       AB_SECONDS (default 90) bounds each run. A BENCH may carry sonic-bench
#                       options after its path, in the same word ('warm=./sonic-bench --warm-l2'
#                       against 'flushed=./sonic-bench' times one build both ways); paths must
#                       have no spaces
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

# One compute-sanitizer job: tool $1 over test binary $2, log to $3.log, "rc seconds" to
# $3.rc. It gets the time left before $4 (epoch seconds); a job that no longer has 10 s is
# not started (rc 125), one that runs out is killed (timeout's rc 124, 137 after the -k grace).
sanitize_job() {
  local tool="$1" bin="$2" base="$3" deadline="$4" start left rc
  start=$(date +%s); left=$((deadline - start))
  if [ "$left" -lt 10 ]; then
    echo "not started: the SANITIZE_SECONDS budget was spent" > "$base.log"; echo "125 0" > "$base.rc"; return
  fi
  timeout -k 15 "$left" compute-sanitizer --tool "$tool" --error-exitcode 1 \
      "$here/tests/$bin" --test-threads=1 > "$base.log" 2>&1
  rc=$?
  echo "$rc $(( $(date +%s) - start ))" > "$base.rc"
  echo "sanitize: $tool $bin finished: rc $rc after $(( $(date +%s) - start )) s"
}

# Reads one job's log and rc: prints "passed failed findings rc seconds verdict".
sanitize_row() {
  local base="$1" p f n rc secs verdict
  p=$(sed -n 's/^test result: .* \([0-9][0-9]*\) passed; \([0-9][0-9]*\) failed.*/\1/p' "$base.log" | tail -1)
  f=$(sed -n 's/^test result: .* \([0-9][0-9]*\) passed; \([0-9][0-9]*\) failed.*/\2/p' "$base.log" | tail -1)
  # "RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)" or "ERROR SUMMARY: N errors".
  n=$(sed -n 's/.*RACECHECK SUMMARY: \([0-9][0-9]*\) hazard.*/\1/p; s/.*ERROR SUMMARY: \([0-9][0-9]*\) error.*/\1/p' "$base.log" | tail -1)
  read -r rc secs < "$base.rc" 2>/dev/null || { rc=?; secs=?; }
  verdict=ok
  case "$rc" in
    0) ;;
    124|137) verdict=TIMEOUT ;;
    125) verdict=NOT-RUN ;;
    *) verdict=FAIL ;;
  esac
  # No libtest summary or no sanitizer summary means the run did not finish: never "ok".
  if [ -z "$p" ] || [ -z "$n" ] || [ "${f:-1}" != 0 ] || [ "$n" != 0 ]; then
    [ "$verdict" = ok ] && verdict=FAIL
  fi
  echo "${p:--} ${f:--} ${n:--} $rc $secs $verdict"
}

sanitize() {
  local out="${1:-$here/sanitize-$(date +%Y%m%d-%H%M%S)}"
  local budget="${SANITIZE_SECONDS:-480}" width="${SANITIZE_JOBS:-8}"
  local tools=(${SANITIZE_TOOLS:-racecheck memcheck initcheck synccheck})
  local start deadline tool t bin rc=0 row
  mkdir -p "$out" || return 1
  export SONIC_SANITIZE=1   # the tests' reduced sizes (tests/src/lib.rs)
  start=$(date +%s); deadline=$((start + budget))
  echo "sanitize: ${tools[*]} over $(ls "$here/tests" | wc -l) test binaries, $width jobs at once, ${budget} s budget, logs in $out"
  # Racecheck first: it is by far the slowest tool, so it starts before the pool fills.
  for tool in "${tools[@]}"; do
    for t in "$here"/tests/*; do
      bin=$(basename "$t")
      while [ "$(jobs -rp | wc -l)" -ge "$width" ]; do wait -n; done
      sanitize_job "$tool" "$bin" "$out/$tool-$bin" "$deadline" &
    done
  done
  wait
  {
    printf '%-10s %-16s %6s %6s %9s %4s %6s  %s\n' tool binary passed failed findings rc secs verdict
    for tool in "${tools[@]}"; do
      for t in "$here"/tests/*; do
        bin=$(basename "$t")
        read -r p f n jrc secs verdict <<< "$(sanitize_row "$out/$tool-$bin")"
        printf '%-10s %-16s %6s %6s %9s %4s %6s  %s\n' "$tool" "$bin" "$p" "$f" "$n" "$jrc" "$secs" "$verdict"
        [ "$verdict" = ok ] || rc=1
      done
    done
    echo "findings: errors (memcheck, initcheck, synccheck) or hazards (racecheck) from the tool's summary line"
    echo "SONIC_SANITIZE=1 (reduced test sizes); wall time $(( $(date +%s) - start )) s; $([ $rc -eq 0 ] && echo 'all ok' || echo 'NOT all ok')"
  } > "$out/summary.txt"
  cat "$out/summary.txt"
  ! grep -q "NOT all ok" "$out/summary.txt"
}

# Starts sonic-soak in its own session, so it survives the end of the command that started it.
soak_start() {
  local dir="${1:?usage: run.sh soak-start DIR [soak args]}"; shift
  mkdir -p "$dir" || return 1
  if [ -f "$dir/soak.pid" ] && [ ! -f "$dir/soak.rc" ] && kill -0 "$(cat "$dir/soak.pid")" 2>/dev/null; then
    echo "a soak is already running in $dir (pid $(cat "$dir/soak.pid"))"; return 2
  fi
  rm -f "$dir/soak.rc" "$dir/soak.pid"
  # The inner shell records its own pid and, when sonic-soak ends, its exit status.
  setsid bash -c 'echo $$ > "$2/soak.pid"; "$1" "${@:3}" --out "$2" > "$2/soak.log" 2>&1; echo $? > "$2/soak.rc"' \
      soak "$here/sonic-soak" "$dir" "$@" < /dev/null > /dev/null 2>&1 &
  local i
  for i in 1 2 3 4 5 6 7 8 9 10; do [ -s "$dir/soak.pid" ] && break; sleep 0.5; done
  date +%s > "$dir/soak.started"
  echo "soak started in $dir (pid $(cat "$dir/soak.pid" 2>/dev/null || echo '?')): sonic-soak $* --out $dir"
  echo "wait for it with: run.sh soak-wait $dir"
}

# Waits for a soak started by soak_start, at most --timeout seconds (default 540, under the
# device machine's 10-minute command limit). Exits with the soak's status, 3 while it runs.
soak_wait() {
  local dir="${1:?usage: run.sh soak-wait DIR [--timeout S]}" bound=540 start pid
  [ "${2:-}" = --timeout ] && bound="${3:?--timeout needs seconds}"
  [ -f "$dir/soak.pid" ] || { echo "no soak was started in $dir"; return 2; }
  pid=$(cat "$dir/soak.pid"); start=$(date +%s)
  while [ ! -f "$dir/soak.rc" ]; do
    if ! kill -0 "$pid" 2>/dev/null; then
      sleep 1; [ -f "$dir/soak.rc" ] && break
      echo "soak (pid $pid) is gone without an exit status (machine given back or killed?)"; tail -20 "$dir/soak.log"; return 1
    fi
    if [ $(( $(date +%s) - start )) -ge "$bound" ]; then
      echo "soak (pid $pid) still running after $(( $(date +%s) - $(cat "$dir/soak.started" 2>/dev/null || echo "$start") )) s; call soak-wait again"
      tail -3 "$dir/soak.log"; return 3
    fi
    sleep 5
  done
  cat "$dir/soak.log"
  local rc; rc=$(cat "$dir/soak.rc")
  echo "soak finished: exit status $rc (log $dir/soak.log, JSON $dir/sonic-soak.json)"
  return "$rc"
}

# The A/B: ROUNDS rounds of every build, alternating, then the table (python3, in the
# device image). A run that fails leaves its cells out of the table and is reported.
ab() {
  local out="${1:?usage: run.sh ab OUTDIR CELLS ROUNDS NAME=BENCH...}" cells="${2:?CELLS}" rounds="${3:?ROUNDS}"
  shift 3
  [ "$#" -ge 2 ] || { echo "run.sh ab: name at least two builds (NAME=BENCH)"; return 2; }
  local i spec name bin rc=0 names=()
  for spec in "$@"; do names+=("${spec%%=*}"); done
  mkdir -p "$out" || return 1
  for i in $(seq 1 "$rounds"); do
    for spec in "$@"; do
      name="${spec%%=*}"; bin="${spec#*=}"
      # $bin unquoted on purpose: a path and the options that follow it.
      timeout "${AB_SECONDS:-90}" $bin --only "$cells" --out "$out/$name-$i" > "$out/$name-$i.log" 2>&1
      local r=$?
      echo "ab: $name round $i rc $r"
      [ "$r" -eq 0 ] || rc=1
    done
  done
  python3 - "$out" "$rounds" "${names[@]}" <<'PY' | tee "$out/ab-table.txt"
import json, os, sys
out, rounds, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def medians(name, field):
    cells = {}
    for i in range(1, rounds + 1):
        path = os.path.join(out, f"{name}-{i}", "sonic-bench.json")
        if os.path.exists(path):
            for r in json.load(open(path)).get("results", []):
                if r.get(field) is not None:
                    cells.setdefault((r["workload"], r["dtype"], r["vocab"], r["batch"]), []).append(r[field])
    return {k: sum(v) / len(v) for k, v in cells.items()}
def table(field, unit, names):
    m = {n: medians(n, field) for n in names}
    base = names[0]
    print("| workload | dtype | V | B | " + " | ".join(f"{n} {unit}" for n in names) + " | " + " | ".join(f"{n}/{base}" for n in names[1:]) + " |")
    print("|---|---|---|---|" + "---|" * (2 * len(names) - 1))
    for k in sorted(m[base]):
        if all(k in m[n] for n in names):
            print(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | " + " | ".join(f"{m[n][k]:.2f}" for n in names)
                  + " | " + " | ".join(f"{m[n][k] / m[base][k]:.3f}" for n in names[1:]) + " |")
table("median_us", "µs", names)
# The builds that time host work (sonic-bench's read_us from session 62, upload_us from 63),
# against the first of them: the host's wall time per read and per upload.
for field, unit, what in (("read_us", "read µs", "Reading a finished step's outputs"),
                          ("upload_us", "upload µs", "Uploading a step's settings")):
    timed = [n for n in names if medians(n, field)]
    if len(timed) >= 2:
        print()
        print(f"{what} (host wall time, {field}):")
        print()
        table(field, unit, timed)
PY
  return "$rc"
}

case "${1:-test}" in
  test) run_tests ;;
  bench)
    shift
    # The JSON records the run's date; without --date it was left empty.
    case " $* " in *" --date "*) ;; *) set -- "$@" --date "$(date -u +%F)" ;; esac
    exec "$here/sonic-bench" "$@" ;;
  soak) shift; exec "$here/sonic-soak" "$@" ;;
  soak-start) shift; soak_start "$@" ;;
  soak-wait) shift; soak_wait "$@" ;;
  peers) shift; exec python3 "$here/peers/torch_peers.py" "$@" ;;
  flashinfer)
    shift
    if [ ! -x "$here/peers/flashinfer_peers" ]; then
      echo "this bundle has no FlashInfer harness; rebuild it with SONIC_FLASHINFER=1 cargo xtask bundle"; exit 2
    fi
    exec "$here/peers/flashinfer_peers" "$@" ;;
  cake)
    shift
    if [ ! -f "$here/peers/cake.tar.gz" ]; then
      echo "this bundle has no cake module; rebuild it with SONIC_FLASHINFER_CAKE=1 cargo xtask bundle"; exit 2
    fi
    exec python3 "$here/peers/cake_peer.py" --payload "$here/peers/cake.tar.gz" "$@" ;;
  profile)
    cell="${2:?usage: run.sh profile WORKLOAD:DTYPE:V:B OUTDIR}"; out="${3:?usage: run.sh profile WORKLOAD:DTYPE:V:B OUTDIR}"
    mkdir -p "$out"; name=$(echo "$cell" | tr ':' '-')
    # Skip the warm-up replays; profile one sampler step (seven kernels, idle ones included;
    # six when no row needs the row mass, as in top-k 50 + top-p steps; one for greedy rows
    # alone: sample_tiles_greedy, which finishes them) or four top-k steps (two kernels each).
    # A heterogeneous cell of few rows may have no row that needs the mass: then the seven
    # launches span two steps. A verification cell's call is three kernels (verify_rows,
    # verify_draws, verify_chains). Clocks stay as found.
    skip=70; count=7
    case "$cell" in topk128:*) skip=80; count=8 ;; greedy:*) skip=10; count=1 ;; topk50_topp09_t07:*) skip=60; count=6 ;; verify_*) skip=30; count=3 ;; esac
    ncu --clock-control none --graph-profiling node -k "regex:sample_|exact_|topk_|verify_" --launch-skip $skip --launch-count $count \
        --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
        -f -o "$out/$name" "$here/sonic-bench" --only "$cell" --replays 100 --out "$out/bench-$name" >/dev/null || exit 1
    ncu --import "$out/$name.ncu-rep" --page details > "$out/$name-details.txt" || exit 1
    grep -E "^  [a-z_]+ \(|Duration|DRAM Throughput|Achieved Occupancy|Registers Per Thread|Dynamic Shared Memory Per Block" \
        "$out/$name-details.txt" > "$out/$name-summary.txt"
    cat "$out/$name-summary.txt" ;;
  profile-source)
    cell="${2:?usage: run.sh profile-source WORKLOAD:DTYPE:V:B KERNEL OUTDIR}"
    kernel="${3:?usage: run.sh profile-source WORKLOAD:DTYPE:V:B KERNEL OUTDIR}"
    out="${4:?usage: run.sh profile-source WORKLOAD:DTYPE:V:B KERNEL OUTDIR}"
    name="$(echo "$cell" | tr ':' '-')-$kernel"; work=$(mktemp -d)
    mkdir -p "$out" "$work/$name"
    # One launch after the warm-up replays; clocks stay as found.
    ncu --clock-control none --graph-profiling node -k "regex:^${kernel}\$" --launch-skip 20 --launch-count 1 \
        --set full --import-source no ${NCU_EXTRA:-} -f -o "$work/$name" "$here/sonic-bench" --only "$cell" --replays 40 \
        --out "$work/bench" >/dev/null || exit 1
    ncu --import "$work/$name.ncu-rep" --page details > "$work/$name/details.txt" || exit 1
    ncu --import "$work/$name.ncu-rep" --page source --print-source sass --csv > "$work/$name/sass.csv" || exit 1
    grep -E "Duration|Warp Cycles Per Issued" "$work/$name/details.txt"
    tar czf "$out/$name.tar.gz" -C "$work" "$name" && rm -rf "$work"
    echo "profile-source: wrote $out/$name.tar.gz" ;;
  sanitize) shift; sanitize "$@" ;;
  ab) shift; ab "$@" ;;
  *) echo "usage: run.sh [test|bench|soak|soak-start|soak-wait|peers|flashinfer|cake|sanitize|profile|profile-source|ab]"; exit 2 ;;
esac
