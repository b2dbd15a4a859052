#!/usr/bin/env bash
# Poster frame at 5 s of a 1080p H.264 clip with a 10 s keyframe interval: Attache (fast and exact
# modes) against `ffmpeg -ss 5 -i FILE -frames:v 1 -vf scale=320:-2 out.jpg`, in one run, with
# peak memory. Targets (issue 4): fast ≤ 0.15×, exact ≤ 1.0× ffmpeg's time; < 64 MB peak.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-.build/release/attache}
runs=${RUNS:-20}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

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
print(f"attache fast: {fast:.1f} ms  ratio {fast / f:.2f}x (target <= 0.15x)")
print(f"attache exact: {exact:.1f} ms  ratio {exact / f:.2f}x (target <= 1.0x)")
PY
peak() { /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1; }
echo "peak RSS: attache fast $(( $(peak "$bin" thumbnail "$clip" -o "$work/a.jpg" --time 5) / 1024 )) MB," \
  "exact $(( $(peak "$bin" thumbnail "$clip" -o "$work/a.jpg" --time 5 --poster exact) / 1024 )) MB," \
  "ffmpeg $(( $(peak ffmpeg -loglevel error -ss 5 -i "$clip" -frames:v 1 -vf scale=320:-2 -y "$work/f.jpg") / 1024 )) MB"
