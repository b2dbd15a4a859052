#!/usr/bin/env bash
# Thumbnails the same large JPEG, PNG and animated GIF with Attache and with vipsthumbnail, in one
# run, and prints the time ratio (Attache / vips) and Attache's peak memory above its baseline.
# Targets (issue 2): ≤ 0.7× on a 9 MP JPEG and PNG, ≤ 0.2× on a GIF's first frame, and a 9 MP JPEG
# thumbnail in < 24 MB above the process baseline.
# Inputs: real 9.2 MP photographs from Debian's gnome-backgrounds/ukui-wallpapers (installed here
# with apt, not committed), and a 1280x800, 60-frame GIF made with ffmpeg.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-.build/release/attache}
runs=${RUNS:-20}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for p in gnome-backgrounds ukui-wallpapers libvips-tools hyperfine ffmpeg time; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="${missing:-} $p"
done
if [ -n "${missing:-}" ]; then
  sudo_=$([ "$(id -u)" = 0 ] || echo sudo)
  $sudo_ apt-get update -qq && $sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing
fi

jpeg=/usr/share/backgrounds/2004default.jpg          # 3840x2400 baseline JPEG, 1.9 MB
png=/usr/share/backgrounds/focal-ubuntukylin.png     # 3840x2400 RGBA PNG, 4.7 MB
gif=$work/animated.gif
ffmpeg -loglevel error -f lavfi -i "testsrc2=s=1280x800:d=4:r=15" \
  -vf "split[a][b];[a]palettegen[p];[b][p]paletteuse" -y "$gif"
tiny=$work/tiny.gif
printf 'GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;' > "$tiny"

printf '%-6s %-22s %10s %10s %8s\n' kind file attache_ms vips_ms ratio
for input in "$jpeg" "$png" "$gif"; do
  kind=${input##*.}
  hyperfine --runs "$runs" --warmup 3 -N --export-json "$work/h.json" \
    "$bin thumbnail $input -o $work/a.jpg --size 320" \
    "vipsthumbnail $input -s 320 -o $work/v.jpg" > /dev/null
  python3 - "$work/h.json" "$kind" "$(basename "$input")" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
a, v = r[0]["mean"] * 1000, r[1]["mean"] * 1000
print(f"{sys.argv[2]:<6} {sys.argv[3]:<22} {a:10.1f} {v:10.1f} {a / v:7.2f}x")
PY
done

peak() { /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1; }
base=$(peak "$bin" thumbnail "$tiny" -o "$work/t.jpg")
jpeg_peak=$(peak "$bin" thumbnail "$jpeg" -o "$work/t.jpg")
png_peak=$(peak "$bin" thumbnail "$png" -o "$work/t.jpg")
vips_peak=$(peak vipsthumbnail "$jpeg" -s 320 -o "$work/v.jpg")
echo
echo "peak RSS: baseline ${base} KB; 9 MP JPEG +$(( (jpeg_peak - base) / 1024 )) MB; 9 MP PNG +$(( (png_peak - base) / 1024 )) MB; vipsthumbnail on the JPEG ${vips_peak} KB in all"
