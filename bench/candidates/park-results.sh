#!/usr/bin/env bash
# Moves earlier sessions' results out of the working tree for a device call, and back after it:
# a call carries at most 64 MiB with the tree, and bench/results/ is over 100 MB.
#
#   bench/candidates/park-results.sh park [KEEP]   moves bench/results/h200-* but KEEP (this
#                                                  session's folder) to $PARK (default /tmp/results-park)
#   bench/candidates/park-results.sh restore       moves them back
#
# While parked, git sees the folders as deleted: commit nothing (no `git add -A`) until restored.
set -euo pipefail
root=$(git rev-parse --show-toplevel)
park=${PARK:-/tmp/results-park}
case "${1:-}" in
  park)
    keep=${2:-}
    mkdir -p "$park"
    for d in "$root"/bench/results/h200-*; do
      [ -d "$d" ] && [ "$(basename "$d")" != "$keep" ] && mv "$d" "$park/"
    done
    du -sh "$root/bench/results" ;;
  restore)
    [ -d "$park" ] && for d in "$park"/h200-*; do [ -d "$d" ] && mv "$d" "$root/bench/results/"; done
    git -C "$root" status --short bench/results | head -5 ;;
  *) sed -n '2,9p' "$0"; exit 2 ;;
esac
