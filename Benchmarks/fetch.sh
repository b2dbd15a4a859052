#!/usr/bin/env bash
# Downloads 1,000 small (16 KB) and 50 large (4 MB) files from a loopback origin with Attache's
# fetch engine (`attache fetch`) and with the curl command line (`--parallel`), in one run, with
# the same parallelism, and prints the ratio of wall times. Target (issue 3): ratio ≤ 1.0.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-.build/release/attache}
parallel=${PARALLEL:-16}
work=$(mktemp -d)
trap 'kill $origin 2>/dev/null || true; rm -rf "$work"' EXIT

mkdir -p "$work/root"
head -c 16384 /dev/urandom > "$work/root/small.bin"
head -c 4194304 /dev/urandom > "$work/root/large.bin"
"$bin" origin --root "$work/root" --port 0 > "$work/origin.log" 2>&1 &
origin=$!
for _ in $(seq 50); do grep -q listening "$work/origin.log" 2>/dev/null && break; sleep 0.1; done
base=$(sed -n 's/.*listening on //p' "$work/origin.log")

: > "$work/urls"
: > "$work/curl.cfg"
for i in $(seq 1000); do echo "$base/small.bin?n=$i" >> "$work/urls"; done
for i in $(seq 50); do echo "$base/large.bin?n=$i" >> "$work/urls"; done
while read -r url; do printf 'url = "%s"\noutput = "/dev/null"\n' "$url" >> "$work/curl.cfg"; done < "$work/urls"

echo "1,000 × 16 KB + 50 × 4 MB from $base, $parallel connections"
ms() { local s=$(date +%s%N); "$@" > "$work/last" 2>&1; echo $(( ($(date +%s%N) - s) / 1000000 )); }
best_a=999999 best_c=999999
for round in 1 2 3; do
  a=$(ms "$bin" fetch --list "$work/urls" --allow-address 127.0.0.1/32 --max-connections-per-host "$parallel")
  [ "$round" = 1 ] && cat "$work/last"
  c=$(ms curl --silent --fail --parallel --parallel-max "$parallel" --parallel-immediate -K "$work/curl.cfg")
  [ "$a" -lt "$best_a" ] && best_a=$a
  [ "$c" -lt "$best_c" ] && best_c=$c
done
python3 -c "print(f'best of 3: attache {$best_a} ms, curl --parallel {$best_c} ms, ratio {$best_a / $best_c:.2f}x')"
