#!/usr/bin/env bash
# Poster frame at 5 s of a 1080p H.264 clip with a 10 s keyframe interval: Attache (fast and exact
# modes) against `ffmpeg -ss 5 -i FILE -frames:v 1 -vf scale=320:-2 out.jpg`, in one run, with
# peak memory. Targets: fast ≤ 0.15×, exact ≤ 1.0× ffmpeg's time; < 64 MB peak.
# Whole processes each: a cold `attache thumbnail` pays ~25 ms to load FFmpeg's 130 shared objects,
# as ffmpeg does. Then the same in a long-running process (what the service and batch jobs pay):
# `attache batch` over 20 payloads naming the clip (distinct URLs, so nothing is cached), one at a
# time, fetched from a loopback origin: per clip, everything included.
set -euo pipefail
cd "$(dirname "$0")/.."
. Benchmarks/lib.sh
bin=${1:-.build/release/attache}
runs=$(setting RUNS 20 5)
work=$(mktemp -d)
trap 'kill $origin 2>/dev/null || true; rm -rf "$work"' EXIT
origin=

clip=$work/gop10s.mp4
# A real photograph panning (not a flat test card), so frames cost what camera footage costs.
photo=/usr/share/backgrounds/2004default.jpg
if [ -f "$photo" ]; then
  ffmpeg -loglevel error -loop 1 -framerate 30 -i "$photo" -t 12 \
    -vf "scale=2400:-2,crop=1920:1080:'(iw-1920)*t/12':'(ih-1080)*t/12',format=yuv420p" \
    -c:v libx264 -preset veryfast -crf 23 -g 300 -keyint_min 300 -sc_threshold 0 -movflags +faststart -y "$clip"
else
  ffmpeg -loglevel error -f lavfi -i "testsrc2=s=1920x1080:d=12:r=30" -c:v libx264 -preset veryfast -crf 23 \
    -g 300 -keyint_min 300 -sc_threshold 0 -pix_fmt yuv420p -movflags +faststart -y "$clip"
fi
echo "clip: $(du -h "$clip" | cut -f1), 1920x1080, 30 fps, keyframes at 0 s and 10 s"

hyperfine --runs "$runs" --warmup 2 -N --export-json "$work/h.json" \
  "ffmpeg -loglevel error -ss 5 -i $clip -frames:v 1 -vf scale=320:-2 -y $work/f.jpg" \
  "$bin thumbnail $clip -o $work/fast.jpg --time 5 --poster fast" \
  "$bin thumbnail $clip -o $work/exact.jpg --time 5 --poster exact" > /dev/null
python3 - "$work/h.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
f, fast, exact = (x["mean"] * 1000 for x in r)
print(f"ffmpeg -ss 5: {f:.1f} ms")
print(f"attache fast: {fast:.1f} ms  ratio {fast / f:.3f}x (target <= 0.15x)")
print(f"attache exact: {exact:.1f} ms  ratio {exact / f:.3f}x (target <= 1.0x)")
PY
peak() { /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1; }  # KiB
units() { awk -v k="$1" 'BEGIN { printf "%.1f MiB (%d KiB = %.1f MB decimal)", k / 1024, k, k * 1.024 / 1000 }'; }
echo "peak RSS (target < 64 MB):"
echo "  attache fast  $(units "$(peak "$bin" thumbnail "$clip" -o "$work/a.jpg" --time 5)")"
echo "  attache exact $(units "$(peak "$bin" thumbnail "$clip" -o "$work/a.jpg" --time 5 --poster exact)")"
echo "  ffmpeg        $(units "$(peak ffmpeg -loglevel error -ss 5 -i "$clip" -frames:v 1 -vf scale=320:-2 -y "$work/f.jpg")")"

mkdir -p "$work/root" && cp "$clip" "$work/root/clip.mp4"
"$bin" origin --root "$work/root" --port 0 > "$work/origin.log" 2>&1 &
origin=$!
for _ in $(seq 50); do grep -q listening "$work/origin.log" 2>/dev/null && break; sleep 0.1; done
base=$(sed -n 's/.*listening on //p' "$work/origin.log")
for i in $(seq 20); do
  echo "{\"aps\":{\"alert\":\"clip\",\"mutable-content\":1},\"com.urbanairship.media_attachment\":{\"url\":\"$base/clip.mp4?n=$i\",\"options\":{\"time\":5}}}"
done > "$work/clips.jsonl"
warm() {  # per clip, in ms: the best of three runs of the whole batch, divided by 20
  local best=999999
  for _ in 1 2 3; do
    rm -rf "$work/media"
    local s=$(date +%s%N)
    "$bin" batch "$work/clips.jsonl" --output "$work/out.jsonl" --allow-address 127.0.0.1/32 --media-dir "$work/media" \
      --concurrency 1 --poster "$1" 2> /dev/null
    local ms=$(( ($(date +%s%N) - s) / 1000000 ))
    [ "$ms" -lt "$best" ] && best=$ms
  done
  grep -c '"thumbnail"' "$work/out.jsonl" > "$work/count"
  echo "$best"
}
wf=$(warm fast); we=$(warm exact)
python3 - "$work/h.json" "$wf" "$we" "$(cat "$work/count")" <<'PY'
import json, sys
f = json.load(open(sys.argv[1]))["results"][0]["mean"] * 1000
wf, we, n = int(sys.argv[2]) / 20, int(sys.argv[3]) / 20, int(sys.argv[4])
print(f"long-running (attache batch, 20 clips one at a time, {n}/20 with a thumbnail):")
print(f"  fast: {wf:.1f} ms per clip  ratio {wf / f:.2f}x;  exact: {we:.1f} ms per clip  ratio {we / f:.2f}x")
PY
