#!/usr/bin/env bash
# 10,000 payloads naming 200 distinct images (1080x720 JPEG crops of a real photograph) from a
# loopback origin through `attache batch`: payloads per second and peak memory; and the same 200
# images through `vipsthumbnail` (one process, all files) for the per-image ratio, in one run.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-.build/release/attache}
work=$(mktemp -d)
. Benchmarks/lib.sh
trap 'kill $origin 2>/dev/null || true; rm -rf "$work"' EXIT

photo=/usr/share/backgrounds/2004default.jpg   # 3840x2400 (gnome-backgrounds, make bench-deps)
mkdir -p "$work/images" "$work/vips"
for i in $(seq 0 199); do
  x=$(( (i * 137) % (3840 - 1080) )); y=$(( (i * 53) % (2400 - 720) ))
  vips crop "$photo" "$work/images/$i.jpg[Q=85]" "$x" "$y" 1080 720
done
port=$(free_port)
"$bin" origin --root "$work/images" --port "$port" > "$work/origin.log" 2>&1 &
origin=$!
for _ in $(seq 50); do grep -q listening "$work/origin.log" 2>/dev/null && break; sleep 0.1; done
for i in $(seq 0 9999); do
  echo "{\"aps\":{\"alert\":\"p$i\",\"mutable-content\":1},\"fcm_options\":{\"image\":\"http://127.0.0.1:$port/$((i % 200)).jpg\"},\"n\":$i}"
done > "$work/in.jsonl"

start=$(date +%s%N)
/usr/bin/time -f "%M" -o "$work/rss" "$bin" batch "$work/in.jsonl" --output "$work/out.jsonl" --allow-address 127.0.0.1/32 \
  --media-dir "$work/media" --concurrency 16 2> "$work/batch.log"
attache_ms=$(( ($(date +%s%N) - start) / 1000000 ))
start=$(date +%s%N)
vipsthumbnail "$work"/images/*.jpg -s 320 -o "$work/vips/%s.jpg"
vips_ms=$(( ($(date +%s%N) - start) / 1000000 ))
tail -5 "$work/batch.log" | sed 's/^/  /'
python3 - "$attache_ms" "$vips_ms" "$(cat "$work/rss")" <<'PY'
import sys
a, v, rss = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
print(f"attache batch: 10,000 payloads in {a} ms = {10000 * 1000 / a:.0f} payloads/s; peak RSS {rss // 1024} MB")
print(f"per distinct image: attache {a / 200:.1f} ms (fetch, validate, thumbnail, store, and 50 payloads each)"
      f" vs vipsthumbnail {v / 200:.1f} ms (thumbnail only): ratio {a / v:.2f}x")
PY
