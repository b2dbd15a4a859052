#!/usr/bin/env bash
# Runs a build command (`swift build …`) and fails when it prints a warning about the project's own
# code — Swift or C, in Sources/, Tests/ or Samples/ — so that a new warning stops CI where it
# appears. Warnings about dependencies (a package's unhandled files, say) are theirs, not ours.
# A warning is printed only when its file compiles, so this holds on a fresh clone (CI's), where
# everything does.
#   usage: Tests/build-without-warnings.sh swift build [ARGS…]
set -uo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp "${TMPDIR:-/tmp}/attache-build.XXXXXX")
trap 'rm -f "$log"' EXIT

"$@" 2>&1 | tee "$log"
code=${PIPESTATUS[0]}
[ "$code" -eq 0 ] || exit "$code"
# `PATH:LINE:COL: warning: …`, PATH absolute under this checkout or relative to it.
ours=$(grep -E "^($PWD/)?(Sources|Tests|Samples)/[^:]+:[0-9]+:([0-9]+:)? warning: " "$log" | sort -u)
if [ -n "$ours" ]; then
  echo
  echo "── the build printed warnings about the project's code ($*) ──"
  echo "$ours"
  exit 1
fi
