#!/usr/bin/env bash
# Command-line contract of `attache enrich` (stdout carries only the payload, exit 0 whenever a
# payload was emitted, exit 2 with one line for input that is not a payload), of `thumbnail`,
# `probe` and `convert` on files and standard input, and of `serve` handing over to attache-serve.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
origin=
trap 'kill $origin 2>/dev/null; rm -rf "$tmp"' EXIT

# Passthrough: byte for byte, exit 0, nothing else on stdout.
"$bin" enrich Samples/payloads/passthrough-not-mutable.json --media-dir "$tmp/m" > "$tmp/out" 2> "$tmp/err"
check "passthrough exits 0" "[ $? -eq 0 ]"
check "passthrough is byte-identical" "cmp -s Samples/payloads/passthrough-not-mutable.json $tmp/out"

# Standard input works the same.
"$bin" enrich - --media-dir "$tmp/m" < Samples/payloads/passthrough-no-media.json > "$tmp/out2" 2>/dev/null
check "stdin passthrough is byte-identical" "cmp -s Samples/payloads/passthrough-no-media.json $tmp/out2"

# A denied address (no allowance): fallback, original bytes, exit 0, report written.
"$bin" enrich Samples/payloads/fallback-address-denied.json --media-dir "$tmp/m" --report "$tmp/report.json" > "$tmp/out3" 2>/dev/null
check "fallback exits 0" "[ $? -eq 0 ]"
check "fallback is byte-identical" "cmp -s Samples/payloads/fallback-address-denied.json $tmp/out3"
check "report names the reason" "grep -q '\"reason\":\"address-denied\"' $tmp/report.json"

# Not a payload: exit 2, one line on stderr, nothing on stdout.
for bad in '[1,2,3]' '{"aps":' 'plain text'; do
  printf '%s' "$bad" | "$bin" enrich - --media-dir "$tmp/m" > "$tmp/out4" 2> "$tmp/err4"
  code=$?
  check "'$bad' exits 2" "[ $code -eq 2 ]"
  check "'$bad' prints nothing on stdout" "[ ! -s $tmp/out4 ]"
  check "'$bad' explains in one line" "[ \$(wc -l < $tmp/err4) -eq 1 ]"
done
python3 -c "print('[' * 70 + ']' * 70)" | "$bin" enrich - --media-dir "$tmp/m" > /dev/null 2>&1
check "too deep exits 2" "[ $? -eq 2 ]"
"$bin" enrich /nonexistent.json --media-dir "$tmp/m" > /dev/null 2>&1
check "missing file exits 2" "[ $? -eq 2 ]"

# Bad flags: a validation error, not a crash.
"$bin" enrich Samples/payloads/fcm.json --deadline soon > /dev/null 2>&1
check "bad --deadline exits 64" "[ $? -eq 64 ]"
"$bin" enrich Samples/payloads/fcm.json --allow-address 10.0.0.0/99 > /dev/null 2>&1
check "bad --allow-address exits 64" "[ $? -eq 64 ]"

# thumbnail and probe read a named file (mapped) or standard input, with the same result.
"$bin" thumbnail Samples/media/photo.jpg -o "$tmp/t1.jpg" > /dev/null 2>&1
check "thumbnail of a file exits 0" "[ $? -eq 0 ]"
"$bin" thumbnail - -o "$tmp/t2.jpg" < Samples/media/photo.jpg > /dev/null 2>&1
check "thumbnail from stdin is the same" "cmp -s $tmp/t1.jpg $tmp/t2.jpg"
# libcrypto (SHA-256) and libcurl are loaded on first use: a thumbnail, which hashes and fetches
# nothing, starts without either (ld.so names each library it initialises).
LD_DEBUG=libs "$bin" thumbnail Samples/media/photo.jpg -o "$tmp/t5.jpg" > /dev/null 2> "$tmp/libs"
check "thumbnail starts without libcrypto or libcurl" "grep -q 'calling init' $tmp/libs && ! grep -q 'calling init: .*lib\(crypto\|curl\)' $tmp/libs"
"$bin" probe Samples/media/clip.mp4 > "$tmp/p1.json" 2>/dev/null && "$bin" probe - < Samples/media/clip.mp4 > "$tmp/p2.json" 2>/dev/null
check "probe of a file and of stdin agree" "cmp -s $tmp/p1.json $tmp/p2.json && grep -q '\"video_codec\":\"h264\"' $tmp/p1.json"
: > "$tmp/empty.jpg"
"$bin" thumbnail "$tmp/empty.jpg" -o "$tmp/t3.jpg" > /dev/null 2> "$tmp/err5"
check "an empty file is refused in one line, exit 1" "[ $? -eq 1 ] && [ \$(wc -l < $tmp/err5) -eq 1 ]"
"$bin" thumbnail "$tmp" -o "$tmp/t4.jpg" > /dev/null 2>&1
code=$?
check "a directory is an error, not a crash" "[ $code -ne 0 ] && [ $code -lt 128 ]"

# attache serve is attache-serve, run in its place: its own help.
"$bin" serve --help > "$tmp/help" 2>&1
check "serve --help is the service's" "grep -q 'attache serve' $tmp/help && grep -q -- '--max-in-flight' $tmp/help"

# A bad value in the environment stops the start, naming the variable (it was silently ignored).
ATTACHE_MAX_IN_FLIGHT=lots "$bin" serve --port 0 > /dev/null 2> "$tmp/env-err"
code=$?
check "a bad ATTACHE_MAX_IN_FLIGHT: the service does not start (exit $code)" "[ $code -ne 0 ] && grep -q 'ATTACHE_MAX_IN_FLIGHT=\"lots\" is not a whole number' $tmp/env-err"
ATTACHE_DEADLINE=soon "$bin" enrich Samples/payloads/passthrough-no-media.json > "$tmp/env-out" 2> "$tmp/env-err"
code=$?
check "a bad ATTACHE_DEADLINE: enrich refuses to start (exit $code)" "[ $code -ne 0 ] && grep -q 'ATTACHE_DEADLINE' $tmp/env-err && [ ! -s $tmp/env-out ]"

# The deadline holds for the whole process: an origin that accepts and never answers, a 300 ms
# deadline, and the original comes out, byte for byte, with the process gone by the deadline + 1 s
# (start-up and exit included; the hung transfer is not waited for). How close to the deadline it
# lands is Benchmarks/deadline.sh's to measure.
start_origin
echo "{\"aps\":{\"alert\":\"h\",\"mutable-content\":1},\"fcm_options\":{\"image\":\"http://127.0.0.1:$port/photo.jpg?hang=1\"}}" > "$tmp/hang.json"
started=$(date +%s%N)
"$bin" enrich "$tmp/hang.json" --deadline 300ms --allow-address 127.0.0.1/32 --media-dir "$tmp/m" --report "$tmp/hang-report.json" > "$tmp/hang-out" 2> /dev/null
code=$? elapsed=$(( ($(date +%s%N) - started) / 1000000 ))
check "a hanging origin: exit 0 with the original bytes" "[ $code -eq 0 ] && cmp -s $tmp/hang.json $tmp/hang-out"
check "a hanging origin: reason timeout" "grep -q '\"reason\":\"timeout\"' $tmp/hang-report.json"
check "a hanging origin: the process ends by the deadline + 1 s (took $elapsed ms)" "[ $elapsed -ge 300 ] && [ $elapsed -lt 1300 ]"

# SIGTERM (or SIGINT) before the answer: the original goes out with reason interrupted, and the
# process exits 128 + the signal's number, as a signalled one would.
# The scratch directory appearing says the process has started (its handlers are in place); it is
# removed before the start, not after (removing it under a running process could lose the race).
for sig in TERM INT; do
  rm -rf "$tmp/m"
  "$bin" enrich "$tmp/hang.json" --deadline 20s --allow-address 127.0.0.1/32 --media-dir "$tmp/m" --report "$tmp/sig-report.json" > "$tmp/sig-out" 2> /dev/null &
  pid=$!
  for _ in $(seq 200); do [ -d "$tmp/m/.attache-tmp" ] && break; sleep 0.05; done
  kill -$sig $pid
  wait $pid
  code=$?
  want=$(( 128 + $(kill -l $sig) ))
  check "SIG$sig: exit $want (got $code)" "[ $code -eq $want ]"
  check "SIG$sig: the original went out, byte for byte" "cmp -s $tmp/hang.json $tmp/sig-out"
  check "SIG$sig: reason interrupted" "grep -q '\"reason\":\"interrupted\"' $tmp/sig-report.json"
done

# A media directory that cannot be made: the payload still goes out, unchanged, with the reason.
: > "$tmp/not-a-dir"
"$bin" enrich "$tmp/hang.json" --media-dir "$tmp/not-a-dir/media" --report "$tmp/nodir.json" > "$tmp/nodir-out" 2> /dev/null
code=$?
check "an unusable media directory: exit 0 with the original (got $code)" "[ $code -eq 0 ] && cmp -s $tmp/hang.json $tmp/nodir-out"
check "an unusable media directory: reason store-failed" "grep -q '\"reason\":\"store-failed\"' $tmp/nodir.json"

# A body big enough to spill to a temp file (9 MB; 8 MB stay in memory) leaves nothing behind.
mkdir -p "$tmp/big"
python3 -c "import sys,random; r=random.Random(1); sys.stdout.buffer.write(b'\xff\xd8\xff\xe0' + bytes(r.getrandbits(8) for _ in range(9_000_000)))" > "$tmp/big/big.jpg"
port2=$(free_port)
"$bin" origin --root "$tmp/big" --port "$port2" > "$tmp/origin2.log" 2>&1 &
origin2=$!
for _ in $(seq 50); do grep -q listening "$tmp/origin2.log" 2>/dev/null && break; sleep 0.1; done
for i in 1 2 3; do
  echo "{\"aps\":{\"alert\":\"b\",\"mutable-content\":1},\"image-url\":\"http://127.0.0.1:$port2/big.jpg?n=$i\"}" \
    | "$bin" enrich - --allow-address 127.0.0.1/32 --media-dir "$tmp/bigmedia" > /dev/null 2>&1
done
left=$(find "$tmp/bigmedia" -type f | wc -l)
check "large fetches leave no temp file (found $left files)" "[ $left -eq 0 ]"

# The disk fills while that body spills to its temp file: the download failed (fetch-failed, not
# store-failed), the original goes out, and nothing is left on the disk. A 2 MB tmpfs in a mount
# namespace of its own, so no exit path has anything to unmount.
mkdir -p "$tmp/full"
# Enriches payload $2 with the media directory on a tmpfs of size $1, in a mount namespace of its
# own; leaves $2-report.json, $2-out, $2-code (exit status) and $2-left (files left on the tmpfs).
enrich_on_small_disk() {
  unshare --mount --map-root-user sh -c '
    mount -t tmpfs -o size="$1" tmpfs "$2" || exit 97
    "$3" enrich "$4.json" --allow-address 127.0.0.1/32 --media-dir "$2/media" --report "$4-report.json" > "$4-out" 2> /dev/null
    echo $? > "$4-code"
    find "$2" -type f | wc -l > "$4-left"' sh "$1" "$tmp/full" "$bin" "$2"
}
echo "{\"aps\":{\"alert\":\"f\",\"mutable-content\":1},\"image-url\":\"http://127.0.0.1:$port2/big.jpg?n=full\"}" > "$tmp/full.json"
enrich_on_small_disk 2m "$tmp/full"
check "a full disk: exit 0 with the original" "[ \"\$(cat $tmp/full-code)\" = 0 ] && cmp -s $tmp/full.json $tmp/full-out"
check "a full disk while downloading is fetch-failed" "grep -q '\"reason\":\"fetch-failed\"' $tmp/full-report.json"
check "a full disk: no file left on it" "[ \"\$(cat $tmp/full-left)\" = 0 ]"
# A disk with room for the directories but not the renditions: store-failed, nothing left.
cp Samples/media/photo.jpg "$tmp/big/photo.jpg"
sed "s|big.jpg?n=full|photo.jpg|" "$tmp/full.json" > "$tmp/full2.json"
enrich_on_small_disk 16k "$tmp/full2"
check "no room to store: exit 0 with the original" "[ \"\$(cat $tmp/full2-code)\" = 0 ] && cmp -s $tmp/full2.json $tmp/full2-out"
check "no room to store is store-failed" "grep -q '\"reason\":\"store-failed\"' $tmp/full2-report.json"
check "no room to store: no file left" "[ \"\$(cat $tmp/full2-left)\" = 0 ]"
kill $origin2 2>/dev/null

# convert: a WebM becomes an MP4 the pipeline's own probe calls supported; a file the device plays
# is left alone; a broken one is exit 1 with the reason on stderr.
"$bin" convert Samples/media/clip-vp9.webm -o "$tmp/clip.mp4" > "$tmp/convert.json" 2> "$tmp/convert.err"
check "convert: a WebM is transcoded" "grep -q '\"method\":\"transcode\"' $tmp/convert.json"
check "convert: the MP4 is one iOS plays" "\"$bin\" probe $tmp/clip.mp4 | grep -q '\"verdict\":\"supported\"'"
"$bin" convert Samples/media/clip.mp4 -o "$tmp/same.mp4" > "$tmp/convert2.json"
check "convert: a playable file is left alone" "grep -q '\"method\":\"none\"' $tmp/convert2.json && [ ! -e $tmp/same.mp4 ]"
"$bin" convert Samples/media/hostile/255-channels.wav -o "$tmp/x.m4a" > /dev/null 2> "$tmp/convert3.err"
code=$?
check "convert: a hostile sound is exit 1 with its reason" "[ $code = 1 ] && grep -q '255 audio channels' $tmp/convert3.err"
# An animated GIF over its cap (here a lowered one) becomes a looping H.264 movie of every frame.
"$bin" convert Samples/media/animated.gif -o "$tmp/gif.mp4" --image-max-bytes 1000 > "$tmp/convert4.json"
check "convert: a GIF over its cap becomes an MP4" "grep -q '\"method\":\"transcode\"' $tmp/convert4.json"
check "convert: the GIF's movie plays, looped to 5.6 s" "\"$bin\" probe $tmp/gif.mp4 | grep -q '\"verdict\":\"supported\"' && [ \"\$(ffprobe -v error -show_entries format=duration -of csv=p=0 $tmp/gif.mp4)\" = 5.600000 ]"
check "convert: --image-max-bytes is bounded" "! \"$bin\" convert Samples/media/animated.gif -o $tmp/x.mp4 --image-max-bytes 20000000 2>/dev/null"
check "probe --encoders names the H.264 encoder" "\"$bin\" probe --encoders | grep -q '\"h264\":\"lib'"

# A slow origin under a long deadline: a first byte 5 s late is waited for within 10 s (no fixed
# 3 s low-speed abort), and a stall ends before the deadline as origin-too-slow, saying what came.
[ -n "$origin" ] || start_origin
sed "s/127.0.0.1:8765/127.0.0.1:$port/" Samples/payloads/fallback-timeout.json > "$tmp/slow-first-byte.json"
"$bin" enrich "$tmp/slow-first-byte.json" --deadline 10s --allow-address 127.0.0.1/32 --media-dir "$tmp/m" --report "$tmp/slow.json" > /dev/null 2>&1
check "a first byte 5 s late within a 10 s deadline is enriched ($(grep -o '"reason":[^,]*' "$tmp/slow.json" | head -1))" "grep -q '\"outcome\":\"enriched\"' $tmp/slow.json"
echo "{\"aps\":{\"alert\":\"s\",\"mutable-content\":1},\"image-url\":\"http://127.0.0.1:$port/photo.jpg?stall=1000\"}" \
  | "$bin" enrich - --deadline 9s --allow-address 127.0.0.1/32 --media-dir "$tmp/m" --report "$tmp/stall.json" > /dev/null 2> "$tmp/stall.err"
check "a stalled origin ends origin-too-slow before the deadline, saying how many bytes came" \
  "grep -q '\"reason\":\"origin-too-slow\"' $tmp/stall.json && grep -q '1000 bytes had arrived' $tmp/stall.json"
# Errors name what is wrong: a duration without its unit, a relay certificate that is not there.
"$bin" enrich - --deadline 1500 < Samples/payloads/passthrough-no-media.json > /dev/null 2> "$tmp/unit.err"
check "--deadline 1500 is refused, naming 1500ms and 1500s" "grep -q '1500ms' $tmp/unit.err && grep -q '1500s' $tmp/unit.err"
"$bin" relay --tls-certificate "$tmp/none.pem" --tls-key "$tmp/none.key" --port 0 --media-dir "$tmp/m" > /dev/null 2> "$tmp/relay.err"
check "relay: a missing certificate is named ($(head -c 200 "$tmp/relay.err"))" "grep -q '^attache relay: --tls-certificate $tmp/none.pem: No such file or directory' $tmp/relay.err"

finish cli
