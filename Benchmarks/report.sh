#!/usr/bin/env bash
# `make bench`: runs the benchmarks (each also runs alone: Benchmarks/NAME.sh [BINARY]) and writes
# docs/benchmarks.md from what they print — the date, the commit, the machine, and for each
# benchmark what it measures (its script's header) and its output, where every Attache figure
# stands beside its anchor measured in the same run, with the ratio.
#   usage: Benchmarks/report.sh [ATTACHE_BINARY] [OUTPUT]   (BENCHES="thumbnail render" runs some and
#   prints their report instead of writing docs/benchmarks.md, which holds every benchmark; QUICK=1
#   gives each benchmark its quick settings (Benchmarks/lib.sh: fewer runs, shorter phases) and
#   prints the report too: the document holds full runs only)
# A benchmark that fails is reported as failed, with the end of its output, and the others still
# run; the exit status is non-zero when any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
bin=${1:-.build/release/attache}
benches=${BENCHES:-thumbnail render fetch poster transcode serve serve-instructions batch deadline store worker isolation relay relay-instructions lab}
# Only a run of every benchmark is the document; some of them are printed instead.
out=${2:-$([ -z "${BENCHES:-}" ] && [ -z "${QUICK:-}" ] && echo docs/benchmarks.md || echo /dev/stdout)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD -- Sources Package.swift Benchmarks 2>/dev/null || commit="$commit (with uncommitted changes)"
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
memory=$(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)
started=$(date -u '+%Y-%m-%d %H:%M UTC')

# The header comment of a script: the lines after the shebang that start with '#', unprefixed.
describe() { sed -n '2,/^[^#]/p' "$1" | sed -n 's/^# \{0,1\}//p'; }

failed=0
for name in $benches; do
  script=Benchmarks/$name.sh
  [ -x "$script" ] || { echo "report.sh: no benchmark $script" >&2; failed=1; continue; }
  echo "── $name" >&2
  start=$(date +%s)
  "$script" "$bin" > "$work/$name.out" 2> "$work/$name.err"
  echo $? > "$work/$name.rc"
  echo $(( $(date +%s) - start )) > "$work/$name.seconds"
  cat "$work/$name.out" >&2
done

{
  echo "# Benchmarks"
  echo
  echo "Written by \`make bench\` (\`Benchmarks/report.sh\`); do not edit by hand. Every figure of"
  echo "Attache's below was measured beside its anchor in the same run on the same machine, so the"
  echo "ratios hold where the absolute times do not. Run one benchmark alone with"
  echo "\`Benchmarks/NAME.sh .build/release/attache\`."
  echo
  echo "| | |"
  echo "|---|---|"
  echo "| date | $started |"
  echo "| commit | $commit |"
  echo "| machine | $(nproc) cores ($cpu), $memory, $(uname -sr) |"
  echo "| binary | \`$bin\` |"
  [ -n "${QUICK:-}" ] && echo "| settings | quick (QUICK=1): fewer runs and shorter phases, wider spread |"
  for name in $benches; do
    [ -f "$work/$name.rc" ] || continue
    echo
    echo "## $name"
    echo
    describe "Benchmarks/$name.sh" | sed 's/^/> /'
    echo
    if [ "$(cat "$work/$name.rc")" = 0 ]; then
      echo "Result ($(cat "$work/$name.seconds") s):"
    else
      failed=1
      echo "**Failed** (exit $(cat "$work/$name.rc")); the end of its output:"
      tail -20 "$work/$name.err" >> "$work/$name.out"
    fi
    echo
    echo '```'
    cat "$work/$name.out"
    echo '```'
  done
} > "$work/report.md"
if [ "$out" = /dev/stdout ]; then cat "$work/report.md"; else mv "$work/report.md" "$out" && echo "wrote $out" >&2; fi
exit "$failed"
