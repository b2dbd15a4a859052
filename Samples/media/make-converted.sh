#!/bin/sh
# How the samples of the formats Attache converts (HEIC, AVIF, WebP, JPEG XL) were made, from the
# JPEG, PNG and GIF samples, with Debian's own encoders (libheif-examples, libavif-bin, webp,
# libjxl-tools, imagemagick): run in Samples/media to make them again. They are committed (a few
# KB each) so that `make demo`, which installs no encoders, shows them too.
set -eu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
q="--min 30 --max 40 -s 6"
convert photo.jpg -resize 640x480 "$tmp/photo.png"
heif-enc -q 40 -o photo.heic "$tmp/photo.png"
avifenc $q "$tmp/photo.png" photo.avif
cwebp -quiet -q 60 "$tmp/photo.png" -o photo.webp
cjxl -q 60 "$tmp/photo.png" photo.jxl
# Adobe RGB (a wide gamut, as Display P3 is): the profile must reach the JPEG made from it.
avifenc $q --icc /usr/share/color/icc/ghostscript/a98.icc "$tmp/photo.png" wide-gamut.avif
cwebp -quiet alpha.png -o alpha.webp
avifenc -s 6 alpha.png alpha.avif
heif-enc -q 50 -o alpha.heic alpha.png
# The stored (unrotated) pixels of rotated.jpg, with irot 3 (270 degrees anticlockwise) in place
# of its EXIF orientation 6: shown upright at 400x600.
convert rotated.jpg -strip "$tmp/stored.png"
avifenc $q --irot 3 "$tmp/stored.png" rotated.avif
gif2webp -quiet -lossy animated.gif -o animated.webp
convert animated.gif -coalesce "$tmp/frame-%02d.png"
avifenc $q --fps 10 "$tmp"/frame-*.png animated.avif
# Header bombs: 8000x8000 (64 MP, over the 50 MP cap) of one colour, a few KB each.
python3 -c '
import struct, zlib
w = h = 8000
row = b"\0" + bytes([0x30, 0x60, 0xa0]) * w
z = zlib.compressobj(9)
data = b"".join(z.compress(row) for _ in range(h)) + z.flush()
chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
open("'"$tmp"'/big.png", "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                                      + chunk(b"IDAT", data) + chunk(b"IEND", b""))'
mkdir -p bombs
cwebp -quiet -lossless "$tmp/big.png" -o bombs/64mp.webp
cjxl "$tmp/big.png" bombs/64mp.jxl
avifenc --min 63 --max 63 -s 10 "$tmp/big.png" bombs/64mp.avif
# Two seconds of clip.mp4 as an animated WebP (20 frames): a GIF of it is large enough to be fitted.
ffmpeg -v error -y -i clip.mp4 -vf fps=10,scale=320:-1 -t 2 -loop 0 -c:v libwebp_anim -q:v 60 movie.webp
# JPEGs of several scans, each kind of layout the coefficient store (coefficients.c) meets: an odd
# size (partial MCUs), progressive at 4:4:4, 4:2:0, 4:2:2 and 4:4:0 subsampling, grey, CMYK,
# arithmetic-coded, and sequential with one scan per component (libjpeg-turbo-progs, imagemagick).
mkdir -p scans
convert photo.jpg -crop 479x357+300+200 +repage "$tmp/crop.ppm"
for sampling in 1x1:444 2x2:420 2x1:422 1x2:440; do
  cjpeg -progressive -sample "${sampling%:*}" -outfile "scans/progressive-${sampling#*:}.jpg" "$tmp/crop.ppm"
done
cjpeg -progressive -grayscale -outfile scans/progressive-grey.jpg "$tmp/crop.ppm"
cjpeg -progressive -arithmetic -outfile scans/progressive-arithmetic.jpg "$tmp/crop.ppm"
convert "$tmp/crop.ppm" -colorspace CMYK -quality 70 -interlace JPEG scans/progressive-cmyk.jpg
printf '0;\n1;\n2;\n' > "$tmp/scans.txt"
cjpeg -scans "$tmp/scans.txt" -outfile scans/sequential-scans.jpg "$tmp/crop.ppm"
