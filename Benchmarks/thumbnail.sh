#!/usr/bin/env bash
# Thumbnails the same large JPEG, PNG, animated GIF, HEIC, AVIF and WebP with Attache and with
# vipsthumbnail, in one run, and prints the time ratio (Attache / vips) and Attache's peak memory
# above its baseline. Targets: ≤ 0.45× on a 9 MP JPEG, ≤ 0.40× on a 9 MP PNG, ≤ 0.15× on a GIF's
# first frame, and a 9 MP JPEG thumbnail in < 24 MB above the process baseline. HEIC, AVIF and
# WebP ≤ 0.9× vipsthumbnail and ≤ 1.15× their library's decode floor. Also the start-up cost:
# `attache --version` and a 1×1 PNG's thumbnail, beside vipsthumbnail's of the same PNG.
# Inputs: real 9.2 MP photographs from Debian's gnome-backgrounds/ukui-wallpapers (installed here
# with apt, not committed), and a 1280x800, 60-frame GIF made with ffmpeg.
set -euo pipefail
cd "$(dirname "$0")/.."
. Benchmarks/lib.sh
bin=${1:-.build/release/attache}
runs=$(setting RUNS 20 5)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

need_packages gnome-backgrounds ukui-wallpapers libvips-tools hyperfine ffmpeg time libheif-examples libavif-bin webp

jpeg=/usr/share/backgrounds/2004default.jpg          # 3840x2400 baseline JPEG, 1.9 MB
png=/usr/share/backgrounds/focal-ubuntukylin.png     # 3840x2400 RGBA PNG, 4.7 MB
gif=$work/animated.gif
ffmpeg -loglevel error -f lavfi -i "testsrc2=s=1280x800:d=4:r=15" \
  -vf "split[a][b];[a]palettegen[p];[b][p]paletteuse" -y "$gif"
tiny_png=$work/tiny.png
python3 -c 'import struct, sys, zlib
chunk = lambda kind, data: struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
sys.stdout.buffer.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
                        + chunk(b"IDAT", zlib.compress(b"\x00\xff\x80\x00")) + chunk(b"IEND", b""))' > "$tiny_png"
tiny=$work/tiny.gif
printf 'GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;' > "$tiny"

# The formats Attache converts, made from the same 9 MP photograph with Debian's encoders. Both
# sides pay the same library's decode: its floor is the library's own tool decoding the whole file
# (heif-convert's library through `vips copy`, avifdec, dwebp), with no scaling and no encoding.
heic=$work/photo.heic avif=$work/photo.avif webp=$work/photo.webp
heif-enc -q 60 -o "$heic" "$jpeg" > /dev/null
avifenc --min 20 --max 30 -s 8 -j 2 "$jpeg" "$avif" > /dev/null
cwebp -quiet -q 75 "$jpeg" -o "$webp"
declare -A floor=(
  [heic]="vips copy $heic $work/floor.v"
  [avif]="avifdec -j 1 $avif $work/floor.y4m"
  [webp]="dwebp $webp -ppm -o $work/floor.ppm"
)

printf '%-6s %-22s %10s %10s %8s %10s %8s\n' kind file attache_ms vips_ms ratio floor_ms vs_floor
for input in "$jpeg" "$png" "$gif" "$heic" "$avif" "$webp"; do
  kind=${input##*.}
  commands=("$bin thumbnail $input -o $work/a.jpg --size 320" "vipsthumbnail $input -s 320 -o $work/v.jpg")
  [ -n "${floor[$kind]:-}" ] && commands+=("${floor[$kind]}")
  hyperfine --runs "$runs" --warmup 3 -N --export-json "$work/h.json" "${commands[@]}" > /dev/null
  python3 - "$work/h.json" "$kind" "$(basename "$input")" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
a, v = r[0]["mean"] * 1000, r[1]["mean"] * 1000
line = f"{sys.argv[2]:<6} {sys.argv[3]:<22} {a:10.1f} {v:10.1f} {a / v:7.2f}x"
if len(r) > 2:
    f = r[2]["mean"] * 1000
    line += f" {f:10.1f} {a / f:7.2f}x"
print(line)
PY
done

hyperfine --runs "$((runs * 2))" --warmup 3 -N --export-json "$work/h.json" "$bin --version" \
  "$bin thumbnail $tiny_png -o $work/a.jpg" "vipsthumbnail $tiny_png -o $work/v.jpg" > /dev/null
python3 - "$work/h.json" <<'PY'
import json, sys
version, ours, vips = (r["median"] * 1000 for r in json.load(open(sys.argv[1]))["results"])
print(f"\nstart-up: attache --version {version:.1f} ms; a 1x1 PNG's thumbnail {ours:.1f} ms (vipsthumbnail {vips:.1f} ms)")
PY

peak() { /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1; }
base=$(peak "$bin" thumbnail "$tiny" -o "$work/t.jpg")
jpeg_peak=$(peak "$bin" thumbnail "$jpeg" -o "$work/t.jpg")
png_peak=$(peak "$bin" thumbnail "$png" -o "$work/t.jpg")
vips_peak=$(peak vipsthumbnail "$jpeg" -s 320 -o "$work/v.jpg")
echo
echo "peak RSS: baseline ${base} KB; 9 MP JPEG +$(( (jpeg_peak - base) / 1024 )) MB; 9 MP PNG +$(( (png_peak - base) / 1024 )) MB; vipsthumbnail on the JPEG ${vips_peak} KB in all"
