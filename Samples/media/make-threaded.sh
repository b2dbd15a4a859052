#!/bin/sh
# How the two samples that take the decoders' second-thread paths were made (run in
# Samples/media to make them again): large-rows.png, 700x500 RGBA with 1.4 MB of rows (over the
# 1 MB from which its inflate runs beside libpng, png_inflate.c), every filter type, IDAT chunks
# of 8 KB; frames.gif, 30 frames of 240x160 (over the 64 KB from which two walkers check its
# frames, gif.c). Small enough for the mutation fuzzing (Tests/fuzz) to take them.
set -eu
python3 - <<'PY'
import struct, zlib
width, height = 700, 500
rows = b"".join(bytes([y % 5]) + b"".join(bytes([x * 255 // width, y * 255 // height, (x // 8 + y // 8) % 2 * 200,
                                                 255 if (x * y) % 193 else 0]) for x in range(width))
               for y in range(height))
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
data = zlib.compress(rows, 9)
with open("large-rows.png", "wb") as f:
    f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0))
            + b"".join(chunk(b"IDAT", data[i:i + 8192]) for i in range(0, len(data), 8192)) + chunk(b"IEND", b""))
PY
ffmpeg -loglevel error -f lavfi -i "testsrc2=s=240x160:d=2:r=15" \
  -vf "split[a][b];[a]palettegen[p];[b][p]paletteuse" -y frames.gif
