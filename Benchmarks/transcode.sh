#!/usr/bin/env bash
# Movies, sounds and a big animation made playable: `attache convert` against the `ffmpeg` command
# line writing the same output settings (the same libraries underneath: libavcodec's VP9 and Opus
# decoders, libx264 at the preset and CRF Attache plans, FFmpeg's AAC encoder, +faststart), in
# one run, with peak memory. Inputs, made here: a 30 s 1080p VP9/Opus WebM, a 60 s Opus voice
# note, a ~20 MB animated GIF, and a 30 s 1080p H.264/AAC MKV (a remux, measured against the
# transcode of the WebM). Goals: transcodes ≤ 1.05× ffmpeg's time, remux ≤ 0.1× a transcode, peak
# RSS ≤ ffmpeg's + 20 MB. CLIP_SECONDS and RUNS (median of) shorten it.
set -euo pipefail
cd "$(dirname "$0")/.."
. Benchmarks/lib.sh
bin=${1:-.build/release/attache}
runs=$(setting RUNS 3 1)
clip_seconds=$(setting CLIP_SECONDS 30 10)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
f="ffmpeg -v error -y"

# A photograph panning (camera-like motion), else a test card.
photo=/usr/share/backgrounds/2004default.jpg   # ukui-wallpapers, as Benchmarks/poster.sh
[ -f "$photo" ] || photo=
if [ -n "$photo" ]; then
  video="-loop 1 -framerate 30 -i $photo"
  pan="scale=2400:-2,crop=1920:1080:'(iw-1920)*t/$clip_seconds':'(ih-1080)*t/$clip_seconds',format=yuv420p"
else
  video="-f lavfi -i testsrc2=s=1920x1080:r=30"
  pan="format=yuv420p"
fi
sound="-f lavfi -i sine=frequency=330:sample_rate=48000"
$f $video $sound -t "$clip_seconds" -map 0:v -map 1:a -vf "$pan" -c:v libvpx-vp9 -b:v 4M -deadline realtime -cpu-used 8 -row-mt 1 \
   -c:a libopus -b:a 96k "$work/clip.webm"
$f $video $sound -t "$clip_seconds" -map 0:v -map 1:a -vf "$pan" -c:v libx264 -preset veryfast -crf 23 -c:a aac -b:a 128k "$work/clip.mkv"
$f -f lavfi -i "sine=frequency=220:sample_rate=48000" -t 60 -ac 1 -c:a libopus -b:a 24k "$work/voice.opus"
# ~20 MB of GIF: 10 s of the panning picture at 800 px, 15 frames a second (a noisy test card
# without the picture).
# (The input is cut, not the output: palettegen waits for the end of its input, and the other
# branch of the split holds every frame until then.)
if [ -n "$photo" ]; then gif_in="-loop 1 -framerate 15 -t 10 -i $photo"; grain=""; else gif_in="-f lavfi -i testsrc2=s=1920x1080:r=15:d=10"; grain="noise=alls=30:allf=t,"; fi
$f $gif_in -vf "scale=2400:-2,crop=1920:1080:'(iw-1920)*t/10':0,${grain}scale=800:-2,split[a][b];[a]palettegen[p];[b][p]paletteuse" \
   "$work/big.gif"
for x in clip.webm clip.mkv voice.opus big.gif; do echo "input $x: $(du -h "$work/$x" | cut -f1)"; done

# What Attache makes of each, then the ffmpeg command with its settings: the size and rates the
# planner chose (Sources/AttacheMedia/Transcoding.swift) are read back from its answer.
"$bin" convert "$work/clip.webm" -o "$work/a-webm.mp4" > "$work/webm.json"
"$bin" convert "$work/clip.mkv" -o "$work/a-mkv.mp4" > "$work/mkv.json"
"$bin" convert "$work/voice.opus" -o "$work/a-voice.m4a" > "$work/voice.json"
"$bin" convert "$work/big.gif" -o "$work/a-gif.mp4" > "$work/gif.json"
read -r w h rate <<< "$(python3 - "$work/webm.json" "$clip_seconds" <<'PY'
import json, sys
a = json.load(open(sys.argv[1])); seconds = float(sys.argv[2])
# The planner's cap: the 50 MB target's bits (less 8 %) over the clip and a second of buffer, less the sound's.
print(a["width"], a["height"], int(50_000_000 * 8 * 0.92 / (seconds + 1) - 128_000))
PY
)"
read -r gw gh <<< "$(python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); print(a["width"], a["height"])' "$work/gif.json")"
x264="-c:v libx264 -preset veryfast -crf 23 -profile:v high -pix_fmt yuv420p"
ff_webm="$f -i $work/clip.webm $x264 -vf scale=$w:$h -maxrate $rate -bufsize $rate -c:a aac -b:a 128k -movflags +faststart $work/f-webm.mp4"
ff_voice="$f -i $work/voice.opus -c:a aac -b:a 64k -movflags +faststart $work/f-voice.m4a"
ff_gif="$f -i $work/big.gif $x264 -vf scale=$gw:$gh -maxrate 4000000 -bufsize 4000000 -movflags +faststart $work/f-gif.mp4"
ff_mkv="$f -i $work/clip.mkv -c copy -movflags +faststart $work/f-mkv.mp4"

hyperfine --runs "$runs" --warmup 0 -N --export-json "$work/h.json" \
  "$ff_webm" "$bin convert $work/clip.webm -o $work/a-webm.mp4" \
  "$ff_voice" "$bin convert $work/voice.opus -o $work/a-voice.m4a" \
  "$ff_gif" "$bin convert $work/big.gif -o $work/a-gif.mp4" \
  "$ff_mkv" "$bin convert $work/clip.mkv -o $work/a-mkv.mp4" > /dev/null

peak() { /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1; }  # KiB
for name in webm voice gif mkv; do
  eval "ff=\$ff_$name"
  case $name in webm) in=clip.webm; out=mp4 ;; voice) in=voice.opus; out=m4a ;; gif) in=big.gif; out=mp4 ;; mkv) in=clip.mkv; out=mp4 ;; esac
  echo "$name $(peak $ff) $(peak "$bin" convert "$work/$in" -o "$work/p.$out")" >> "$work/rss"
done
for x in a-webm.mp4 f-webm.mp4 a-voice.m4a f-voice.m4a a-gif.mp4 f-gif.mp4 a-mkv.mp4 f-mkv.mp4; do
  echo "$x $(stat -c %s "$work/$x") $(ffprobe -v error -show_entries format=duration -of csv=p=0 "$work/$x")" >> "$work/outputs"
done

python3 - "$work/h.json" "$work/rss" "$work/outputs" "$work/webm.json" "$work/mkv.json" "$work/voice.json" "$work/gif.json" "$runs" \
  "$clip_seconds" "$(du -m "$work/big.gif" | cut -f1)" <<'PY'
import json, sys
r = [x["median"] * 1000 for x in json.load(open(sys.argv[1]))["results"]]
rss = {l.split()[0]: (int(l.split()[1]), int(l.split()[2])) for l in open(sys.argv[2])}
out = {l.split()[0]: (int(l.split()[1]), float(l.split()[2])) for l in open(sys.argv[3])}
answers = {k: json.load(open(p)) for k, p in zip(["webm", "mkv", "voice", "gif"], sys.argv[4:8])}
runs, seconds, gif_mb = sys.argv[8], sys.argv[9], sys.argv[10]
print(f"median of {runs} runs, whole processes; output bytes and seconds as probed by ffprobe")
print()
print("| input | ffmpeg | attache | ratio | goal | ffmpeg peak RSS | attache peak RSS | goal | ffmpeg out | attache out |")
print("|---|---|---|---|---|---|---|---|---|---|")
rows = [("webm", f"{seconds} s 1080p VP9/Opus WebM → H.264/AAC MP4", 0), ("voice", "60 s Opus voice note → AAC M4A", 2),
        ("gif", f"{gif_mb} MB animated GIF → H.264 MP4", 4), ("mkv", f"{seconds} s 1080p H.264/AAC MKV → MP4 (remux)", 6)]
for key, label, i in rows:
    ff, at = r[i], r[i + 1]
    fr, ar = rss[key]
    ext = "m4a" if key == "voice" else "mp4"
    fo, ao = out[f"f-{key}.{ext}"], out[f"a-{key}.{ext}"]
    goal = "≤ 1.05×" if key != "mkv" else "—"
    print(f"| {label} | {ff:.0f} ms | {at:.0f} ms | {at / ff:.2f}× | {goal} | {fr / 1024:.1f} MiB | {ar / 1024:.1f} MiB | "
          f"≤ +20 MB ({'met' if (ar - fr) * 1024 <= 20_000_000 else 'missed'}) | {fo[0] / 1e6:.2f} MB, {fo[1]:.1f} s | {ao[0] / 1e6:.2f} MB, {ao[1]:.1f} s |")
print()
print(f"remux of the MKV against the transcode of the WebM (same length and size): {r[7]:.0f} ms / {r[1]:.0f} ms = "
      f"{r[7] / r[1]:.3f}× (goal ≤ 0.1×); attache chose {answers['mkv']['method']} for the MKV, {answers['webm']['method']} for the WebM")
print(f"encoded at {answers['webm']['width']}x{answers['webm']['height']} with {answers['webm'].get('video')}; "
      f"the GIF at {answers['gif']['width']}x{answers['gif']['height']}, {answers['gif'].get('frames')} frames")
PY
