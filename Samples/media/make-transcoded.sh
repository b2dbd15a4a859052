#!/bin/sh
# How the samples of movies and sounds iOS does not play (and the hostile ones) were made, with
# Debian's ffmpeg (libvpx, libaom, libx264, libx265, libopus, libvorbis): run in Samples/media to
# make them again. They are committed (a few KB each) so that `make demo` and the tests, which
# install no encoders, have them.
set -eu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
f="ffmpeg -v error -y"
src="-f lavfi -i testsrc2=size=320x180:rate=24 -f lavfi -i sine=frequency=440:sample_rate=48000"
# A clip cut from a web player: VP9 and Opus in WebM; AV1 likewise.
$f $src -t 2 -c:v libvpx-vp9 -b:v 150k -deadline realtime -cpu-used 8 -c:a libopus -b:a 32k clip-vp9.webm
$f $src -t 1 -c:v libaom-av1 -b:v 100k -cpu-used 8 -c:a libopus -b:a 32k clip-av1.webm
# Streams MP4 carries as they are: H.264 and AAC in Matroska; HEVC (hev1) in Matroska.
$f $src -t 2 -c:v libx264 -preset veryfast -crf 30 -c:a aac -b:a 48k clip-h264.mkv
$f -i hevc.mp4 -c copy -tag:v hev1 clip-hevc.mkv
# Voice notes and sounds: Opus and Vorbis in Ogg, FLAC, and a WAV (over a small target in the tests).
$f -f lavfi -i "sine=frequency=220:sample_rate=48000" -t 3 -ac 1 -c:a libopus -b:a 24k voice.opus
$f -f lavfi -i "sine=frequency=330:sample_rate=44100" -t 2 -c:a libvorbis -q:a 0 sound.ogg
$f -f lavfi -i "sine=frequency=550:sample_rate=22050" -t 1 -ac 1 sound.flac
$f -f lavfi -i "sine=frequency=660:sample_rate=22050" -t 2 -ac 1 -c:a pcm_s16le sound.wav
mkdir -p hostile
# 100,000 frames of 2x2 pixels (1000 a second): more frames than any notification needs.
$f -f lavfi -i color=c=red:size=2x2:rate=1000 -t 100 -c:v libx264 -preset ultrafast -g 100000 "$tmp/frames.mkv"
cp "$tmp/frames.mkv" hostile/100k-frames.mkv
# 160 frames on a 2000x2000 canvas (an 8-pixel square moving over gray): 640 million pixels to
# decode, over what an animation may have to be converted, in 17 KB.
$f -f lavfi -i "color=c=gray:s=2000x2000:r=10" -f lavfi -i "color=c=white:s=8x8:r=10" -t 16 \
  -filter_complex "[0][1]overlay=x=n*8:y=n*8" -c:v libwebp_anim -quality 5 -loop 0 hostile/160-frames-2000px.webp
# 700 s (past the 600 s movie limit) as live streams, which declare no duration: H.264 in
# Matroska (copied packet by packet) and VP9 in WebM (encoded again).
$f -f lavfi -i color=c=gray:size=16x16:rate=1 -t 700 -c:v libx264 -preset ultrafast -g 1000 -f matroska -live 1 hostile/live-700s.mkv
$f -f lavfi -i color=c=gray:size=16x16:rate=1 -t 700 -c:v libvpx-vp9 -deadline realtime -cpu-used 8 -g 1000 -f webm -live 1 hostile/live-700s-vp9.webm
# A clip whose packets stop decoding after the first second: its VP9 frames from there on are noise.
python3 - clip-vp9.webm hostile/noise-after-1s.webm <<'PY'
import sys, random
data = bytearray(open(sys.argv[1], "rb").read())
random.seed(7)
# Past the first ~45 %, keep the EBML framing bytes but scramble the payload: SimpleBlocks whose
# frames are noise (each block header is a few bytes; most bytes are frame data).
start = len(data) * 45 // 100
for i in range(start, len(data) - 16):
    if i % 97 > 8:
        data[i] = random.randrange(256)
open(sys.argv[2], "wb").write(data)
PY
# A WAV header promising 255 channels.
python3 - hostile/255-channels.wav <<'PY'
import struct, sys
channels, rate, bits = 255, 8000, 16
frames = 40
data = bytes(channels * frames * 2)
fmt = struct.pack("<HHIIHH", 1, channels, rate, rate * channels * bits // 8, channels * bits // 8, bits)
body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(data)) + data
open(sys.argv[1], "wb").write(b"RIFF" + struct.pack("<I", len(body)) + body)
PY
# clip.mp4 whose movie header declares 30 hours.
python3 - clip.mp4 hostile/30-hours.mp4 <<'PY'
import struct, sys
data = bytearray(open(sys.argv[1], "rb").read())
i = data.index(b"mvhd")
version = data[i + 4]
assert version == 0
timescale = struct.unpack(">I", data[i + 16:i + 20])[0]
data[i + 20:i + 24] = struct.pack(">I", timescale * 30 * 3600)
open(sys.argv[2], "wb").write(data)
PY
# A video track with no frames at all, beside a second of sound.
$f -f lavfi -i sine=frequency=440 -f lavfi -i testsrc2=size=64x64:rate=1 -t 1 -map 0:a -map 1:v -c:a libopus -c:v libvpx-vp9 \
   -frames:v 0 hostile/empty-video-track.webm
