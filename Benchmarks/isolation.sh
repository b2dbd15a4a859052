#!/usr/bin/env bash
# The decoder sandbox's price: the same payloads through `attache batch` with decoding in this
# process (--isolation in-process) and in sandboxed attache-decode helpers (--isolation process),
# side by side in one run, per kind of media: a 9 MP JPEG and PNG, a 1080x720 JPEG (a typical push
# image), a 640x400 30-frame GIF, and a 1080p movie's poster frame. Each payload names a distinct
# URL (no cache), served from a loopback origin.
#   latency: payloads one at a time (--concurrency 1), median ms per payload, end to end (fetch,
#            decode, render, store); the difference is what isolation adds per image.
#   throughput: payloads per second at --concurrency 4 on every core, over 5N payloads (so that
#            the helpers' start, once per batch, weighs as little as a long-running service's).
# Goal: ≤ 2 ms added per image, ≤ 10 % less throughput. Inputs from gnome-backgrounds
# and ukui-wallpapers (make bench-deps), the GIF made with ffmpeg.
set -euo pipefail
cd "$(dirname "$0")/.."
. Benchmarks/lib.sh
bin=${1:-.build/release/attache}
n=$(setting N 60 20)
work=$(mktemp -d)
trap 'kill $origin 2>/dev/null || true; rm -rf "$work"' EXIT

mkdir -p "$work/files"
cp /usr/share/backgrounds/2004default.jpg "$work/files/jpeg-9mp.jpg"        # 3840x2400
cp /usr/share/backgrounds/focal-ubuntukylin.png "$work/files/png-9mp.png"   # 3840x2400 RGBA
vips crop "$work/files/jpeg-9mp.jpg" "$work/files/jpeg-1080.jpg[Q=85]" 1200 800 1080 720
ffmpeg -loglevel error -f lavfi -i "testsrc2=s=640x400:d=2:r=15" \
  -vf "split[a][b];[a]palettegen[p];[b][p]paletteuse" -y "$work/files/gif.gif"
cp Samples/media/gop10s-1080p.mp4 "$work/files/poster.mp4"
start_origin "$work/files" "$work/origin.log"

# run FILE ISOLATION CONCURRENCY COUNT: prints "wall_ms median_payload_ms"
run() {
  local file=$1 isolation=$2 concurrency=$3 count=$4 out="$work/out-$RANDOM"
  for i in $(seq "$count"); do
    echo "{\"aps\":{\"alert\":\"p$i\",\"mutable-content\":1},\"image-url\":\"http://127.0.0.1:$port/$file?$isolation-$concurrency-$i\"}"
  done > "$out.in.jsonl"
  local start=$(date +%s%N)
  "$bin" batch "$out.in.jsonl" --output "$out.jsonl" --allow-address 127.0.0.1/32 --media-dir "$work/media-$isolation" \
    --concurrency "$concurrency" --isolation "$isolation" 2> /dev/null
  local wall=$(( ($(date +%s%N) - start) / 1000000 ))
  python3 - "$out.jsonl.report.jsonl" "$wall" <<'PY'
import json, statistics, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert all(l["outcome"] == "enriched" for l in lines), [l["outcome"] for l in lines if l["outcome"] != "enriched"][:3]
print(sys.argv[2], statistics.median(l["elapsed_ms"] for l in lines))
PY
}

printf '%-12s %12s %12s %9s %14s %14s %7s\n' kind in-proc_ms isolated_ms added_ms in-proc_per_s isolated_per_s ratio
for file in jpeg-9mp.jpg png-9mp.png jpeg-1080.jpg gif.gif poster.mp4; do
  read -r _ lat_in < <(run "$file" in-process 1 "$n")
  read -r _ lat_iso < <(run "$file" process 1 "$n")
  read -r wall_in _ < <(run "$file" in-process 4 $((n * 5)))
  read -r wall_iso _ < <(run "$file" process 4 $((n * 5)))
  python3 - "${file%.*}" "$lat_in" "$lat_iso" "$wall_in" "$wall_iso" $((n * 5)) <<'PY'
import sys
kind, li, ls, wi, ws, n = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
ti, ts = n * 1000 / wi, n * 1000 / ws
print(f"{kind:<12} {li:12.1f} {ls:12.1f} {ls - li:9.1f} {ti:14.1f} {ts:14.1f} {ts / ti:7.2f}")
PY
done
