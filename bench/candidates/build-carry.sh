#!/usr/bin/env bash
# Builds what a device call carries (`run`'s carry: [".carry"]): one folder .carry/NAME/ a build,
# each a commit with candidate diffs applied, as the device scripts' carry-unpack.sh expects it.
#
#   bench/candidates/build-carry.sh [--bench-only] NAME=REV[:DIFF[:DIFF...]] ...
#
# REV is a commit (HEAD: this checkout's); each DIFF is a path, relative to the checkout, of a
# git diff applied on REV in order (a candidate here, say). Each build is a detached worktree under
# $CARRY_WORK (default /tmp/sonic-carry-work), bundled with `cargo xtask bundle` into one shared
# CARGO_TARGET_DIR (default /tmp/sonic-carry-target), so later builds reuse the earlier ones'
# crates. Into .carry/NAME/ go, xz-compressed: run.sh, sonic-bench and, without --bench-only,
# sonic-soak and the six test binaries (about 2 MB each); md5s of the uncompressed files go to
# .carry/NAME/md5.txt, and the build's PTX md5 to .carry/NAME/ptx.md5. --bench-only builds are for
# A/B runs (`run.sh ab`), where only sonic-bench runs; it applies to every build named after it.
#
# A device call carries at most 64 MiB with the working tree, which bench/results/ (over 100 MB)
# alone exceeds: move the earlier sessions' results out of the tree for the call (park-results.sh).
set -euo pipefail
root=$(git rev-parse --show-toplevel)
work=${CARRY_WORK:-/tmp/sonic-carry-work}
target=${CARGO_TARGET_DIR:-/tmp/sonic-carry-target}
bench_only=0
[ $# -gt 0 ] || { sed -n '2,16p' "$0"; exit 2; }
mkdir -p "$work" "$root/.carry"
for spec in "$@"; do
  if [ "$spec" = --bench-only ]; then bench_only=1; continue; fi
  name=${spec%%=*}; rest=${spec#*=}
  [ "$name" != "$spec" ] && [ -n "$name" ] || { echo "build-carry: $spec is not NAME=REV[:DIFF...]" >&2; exit 2; }
  IFS=: read -r -a parts <<< "$rest"
  rev=$(git -C "$root" rev-parse --verify "${parts[0]}^{commit}")
  tree="$work/$name"
  git -C "$root" worktree remove --force "$tree" 2>/dev/null || rm -rf "$tree"
  git -C "$root" worktree add --detach --quiet "$tree" "$rev"
  for diff in "${parts[@]:1}"; do
    git -C "$tree" apply "$root/$diff"
  done
  echo "build-carry: $name = ${rev:0:8}${parts[1]:+ + ${parts[*]:1}}"
  (cd "$tree" && CARGO_TARGET_DIR="$target" cargo xtask bundle > "$work/$name.log" 2>&1) || {
    tail -20 "$work/$name.log" >&2; exit 1; }
  out="$root/.carry/$name"; rm -rf "$out"; mkdir -p "$out/tests"
  files=(run.sh sonic-bench)
  [ $bench_only = 1 ] || files+=(sonic-soak $(cd "$tree/bundle" && ls tests/*))
  (cd "$tree/bundle" && md5sum "${files[@]}") > "$out/md5.txt"
  md5sum < "$tree/bundle/sampler_kernels.ptx" | cut -c1-32 > "$out/ptx.md5"
  for f in "${files[@]}"; do xz -T0 -6 -c "$tree/bundle/$f" > "$out/$f.xz"; done
  rmdir "$out/tests" 2>/dev/null || true
  git -C "$root" worktree remove --force "$tree"
  echo "build-carry: .carry/$name $(du -sh "$out" | cut -f1), PTX $(cat "$out/ptx.md5")"
done
du -sh "$root/.carry"
