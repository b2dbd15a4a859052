#!/usr/bin/env bash
# Downloads 1,000 small (16 KB) and 50 large (4 MB) files from a loopback origin with Attache's
# fetch engine (`attache fetch`) and with the curl command line (`--parallel`), in one run, with
# the same parallelism, and prints the ratio of wall times. Target: ratio ≤ 1.0.
# Both discard the bodies: `attache fetch` uses the engine's streaming form (each chunk is handed
# to a consumer that counts it), curl writes to /dev/null. Also printed: the engine's own wall time
# inside the process (without the ~15 ms it takes to start a Swift process) and curl writing each
# body to a file, closer to what enrich does (it keeps bodies, in memory or a temp file).
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
n=0
mkdir -p "$work/out"
: > "$work/curl-files.cfg"
while read -r url; do
  n=$((n + 1))
  printf 'url = "%s"\noutput = "/dev/null"\n' "$url" >> "$work/curl.cfg"
  printf 'url = "%s"\noutput = "%s/out/%d"\n' "$url" "$work" "$n" >> "$work/curl-files.cfg"
done < "$work/urls"

echo "1,000 × 16 KB + 50 × 4 MB from $base, $parallel connections"
ms() { local s=$(date +%s%N); "$@" > "$work/last" 2>&1; echo $(( ($(date +%s%N) - s) / 1000000 )); }
best_a=999999 best_c=999999 best_f=999999 best_e=999999
for round in 1 2 3 4 5; do
  a=$(ms "$bin" fetch --list "$work/urls" --allow-address 127.0.0.1/32 --parallel "$parallel" --max-connections-per-host "$parallel")
  [ "$round" = 1 ] && cat "$work/last"
  e=$(sed -n 's/.*wall_ms=\([0-9]*\).*/\1/p' "$work/last")
  c=$(ms curl --silent --fail --parallel --parallel-max "$parallel" --parallel-immediate -K "$work/curl.cfg")
  f=$(ms curl --silent --fail --parallel --parallel-max "$parallel" --parallel-immediate -K "$work/curl-files.cfg")
  rm -f "$work"/out/*
  [ "$a" -lt "$best_a" ] && best_a=$a
  [ "$c" -lt "$best_c" ] && best_c=$c
  [ "$f" -lt "$best_f" ] && best_f=$f
  [ "$e" -lt "$best_e" ] && best_e=$e
done
echo "best of 5, whole processes: attache $best_a ms (the engine alone: $best_e ms)"
python3 -c "print(f'  curl --parallel to /dev/null: $best_c ms, ratio {$best_a / $best_c:.2f}x')"
python3 -c "print(f'  curl --parallel to files:     $best_f ms, ratio {$best_a / $best_f:.2f}x')"
python3 -c "print(f'  the engine alone against curl --parallel to /dev/null: {$best_e / $best_c:.2f}x')"
