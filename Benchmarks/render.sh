#!/usr/bin/env bash
# One fresh 9 MP image through `attache enrich` (in process, its default), against the floor of
# the decoding it needs, in one run (issue 19):
#   render: the report's render time (decode, resample, encode both renditions, placeholder),
#     median of RUNS, beside `djpeg -scale N/8` of the same file at the scale Attache decodes it
#     to (3/8 for 320 + 1080 of a 3840 px photo, 1/8 for a 320 px thumbnail alone), whole
#     process, hyperfine. Target: ≤ 1.3× that floor. One decode serves both renditions.
#   peak RSS (/usr/bin/time, MiB) of one `attache enrich`: a baseline 9 MP JPEG ≤ 48 MB; a
#     progressive one, which must buffer every coefficient, ≤ 1.1× djpeg's own peak.
#   PNG: the floor (libpng reading rows with no transformation: inflate + unfilter, in process,
#     best of RUNS) beside Attache's render of a 9 MP RGBA PNG (target ≤ 1.3×), and the inflate
#     alone by zlib and by libdeflate (Benchmarks/tools/png_floor.c).
# Inputs from gnome-backgrounds and ukui-wallpapers (make bench-deps).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-.build/release/attache}
runs=${RUNS:-15}
work=$(mktemp -d)
. Benchmarks/lib.sh
trap 'kill $origin 2>/dev/null || true; rm -rf "$work"' EXIT

mkdir -p "$work/root"
cp /usr/share/backgrounds/2004default.jpg "$work/root/baseline.jpg"     # 3840x2400, baseline 4:2:0
cp /usr/share/backgrounds/rhythm.jpg "$work/root/progressive.jpg"       # 3840x2400, progressive 4:4:4
cp /usr/share/backgrounds/focal-ubuntukylin.png "$work/root/rgba.png"   # 3840x2400 RGBA
start_origin "$work/root" "$work/origin.log"

# enrich FILE [flags]: "median_render_ms peak_rss_mib" over $runs fresh URLs
enrich() {
  local file=$1; shift
  for i in $(seq "$runs"); do
    echo "{\"aps\":{\"alert\":\"hi\",\"mutable-content\":1},\"image-url\":\"http://127.0.0.1:$port/$file?r$RANDOM-$i\"}" > "$work/p.json"
    /usr/bin/time -f %M -o "$work/rss.$i" "$bin" enrich --allow-address 127.0.0.1/32 --media-dir "$work/media" \
      --report "$work/r.$i.json" "$@" "$work/p.json" > /dev/null 2>&1
  done
  python3 - "$work" "$runs" <<'PY'
import json, statistics, sys
work, runs = sys.argv[1], int(sys.argv[2])
renders = [json.load(open(f"{work}/r.{i}.json"))["attachments"][0]["timings"]["render"] for i in range(1, runs + 1)]
peaks = [int(open(f"{work}/rss.{i}").read()) / 1024 for i in range(1, runs + 1)]
print(f"{statistics.median(renders):.1f} {max(peaks):.1f}")
PY
}
# djpeg_ms SCALE FILE: mean whole-process time, hyperfine
djpeg_ms() {
  hyperfine -N -w 2 -r "$runs" --export-json "$work/h.json" "djpeg -scale $1 -outfile /dev/null $2" > /dev/null 2>&1
  python3 -c "import json; print(round(json.load(open('$work/h.json'))['results'][0]['mean'] * 1000, 1))"
}
djpeg_peak() { /usr/bin/time -f %M djpeg -scale "$1" -outfile /dev/null "$2" 2>&1 >/dev/null | tail -1 | awk '{printf "%.1f", $1 / 1024}'; }

printf '%-34s %9s %14s %7s %9s %12s\n' "input, renditions" "render" "djpeg floor" "ratio" "peak RSS" "djpeg peak"
for kind in baseline progressive; do
  file="$work/root/$kind.jpg"
  for renditions in "320+1080" "320"; do
    if [ "$renditions" = 320 ]; then scale=1/8; flags=(--display-size 320); else scale=3/8; flags=(); fi
    read -r render peak < <(enrich "$kind.jpg" "${flags[@]}")
    floor=$(djpeg_ms "$scale" "$file")
    printf '%-34s %7s ms %9s ms %s %6.1f× %6s MB %9s MB\n' "$kind 9 MP JPEG, $renditions" "$render" "$floor" "($scale)" \
      "$(python3 -c "print($render / $floor)")" "$peak" "$(djpeg_peak "$scale" "$file")"
  done
done

cc -O2 -o "$work/png_floor" Benchmarks/tools/png_floor.c -lpng16 -lz -ldeflate
read -r render peak < <(enrich rgba.png)
"$work/png_floor" "$work/root/rgba.png" "$runs" | tee "$work/png.txt"
floor=$(sed -n 's/.*unfilter) \([0-9.]*\) ms.*/\1/p' "$work/png.txt")
printf 'attache render of the 9 MP RGBA PNG (320 + 1080): %s ms = %.2f× the libpng floor; peak RSS %s MB\n' "$render" \
  "$(python3 -c "print($render / $floor)")" "$peak"
