#!/usr/bin/env bash
# The store step: how much of the deadline storing takes, for a 3 MB animated GIF (stored as it
# came) and a 9 MP JPEG (a display copy and a thumbnail are stored), read from the report's
# `timings.store` of `attache enrich` against a local origin. Two stores: a directory (fsynced),
# and an S3 bucket on a real SeaweedFS on loopback (`make test-deps`; signed HEAD + PUT, no
# network between). Each run stores where nothing is yet (a fresh directory, a fresh prefix).
# With a second binary (an older build), both are measured in the same run and the ratio printed.
#   usage: Benchmarks/store.sh [ATTACHE_BINARY] [BASELINE_BINARY]   (N=15 runs each)
set -euo pipefail
cd "$(dirname "$0")/.."
. Benchmarks/lib.sh
bin=${1:-.build/release/attache}
base=${2:-}
n=$(setting N 15 5)
tmp=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
source Tests/cli/seaweedfs.sh

mkdir -p "$tmp/media"
ffmpeg -loglevel error -f lavfi -i "testsrc2=s=1280x800:d=4:r=15" \
  -vf "split[a][b];[a]palettegen[p];[b][p]paletteuse" -y "$tmp/media/anim.gif"
convert -size 3840x2400 plasma:fractal -quality 90 "$tmp/media/photo.jpg"
port=$(free_port)
"$bin" origin --root "$tmp/media" --port "$port" > "$tmp/origin.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do grep -q listening "$tmp/origin.log" 2>/dev/null && break; sleep 0.1; done
stores=(directory)
if start_seaweedfs "$tmp/weed" bench; then
  pids+=("$weed_pid")
  stores+=(s3)
fi

# Median store time (ms) of N enrichments of FILE by BINARY into STORE (directory or s3).
store_ms() {
  local binary=$1 file=$2 store=$3 out=() where
  for i in $(seq "$n"); do
    echo "{\"aps\":{\"alert\":\"s\",\"mutable-content\":1},\"image-url\":\"http://127.0.0.1:$port/$file?n=$i\"}" > "$tmp/p.json"
    rm -rf "$tmp/store"
    where=()
    [ "$store" = s3 ] && where=(--store "s3://bench/run-$RANDOM$RANDOM/")
    AWS_ACCESS_KEY_ID=${key:-} AWS_SECRET_ACCESS_KEY=${secret:-} AWS_ENDPOINT_URL_S3=${s3:-} \
      "$binary" enrich "$tmp/p.json" --allow-address 127.0.0.1/32 --media-dir "$tmp/store" "${where[@]}" \
      --report "$tmp/r.json" > /dev/null 2>&1
    out+=("$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); a=r["attachments"][0]; assert a["outcome"]=="attached", a; print(a["timings"]["store"])' "$tmp/r.json")")
  done
  printf '%s\n' "${out[@]}" | python3 -c 'import sys,statistics; print(f"{statistics.median(float(x) for x in sys.stdin.read().split()):.1f}")'
}

echo "| input | store | store step (median of $n) |${base:+ baseline | ratio |}"
echo "|---|---|---|${base:+---|---|}"
for store in "${stores[@]}"; do
  for file in anim.gif photo.jpg; do
    now=$(store_ms "$bin" "$file" "$store")
    if [ -n "$base" ]; then
      before=$(store_ms "$base" "$file" "$store")
      ratio=$(python3 -c "print(f'{$now / max($before, 0.01):.2f}x')")
      echo "| $file | $store | $now ms | $before ms | $ratio |"
    else
      echo "| $file | $store | $now ms |"
    fi
  done
done
[ "${#stores[@]}" -gt 1 ] || echo "(no SeaweedFS: run make test-deps for the S3 rows)"
