#!/usr/bin/env bash
# Command-line contract of `attache enrich` (stdout carries only the payload, exit 0 whenever a
# payload was emitted, exit 2 with one line for input that is not a payload), of `thumbnail` and
# `probe` on files and standard input, and of `serve` handing over to attache-serve.
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

# The deadline holds for the whole process: an origin that accepts and never answers, a 300 ms
# deadline, and the original comes out, byte for byte, with the process gone well before 300 ms
# plus start-up and exit (no wait on the hung transfer). Release builds take ~305 ms here, debug
# ~320 ms; the bound leaves room for a loaded CI machine.
start_origin
echo "{\"aps\":{\"alert\":\"h\",\"mutable-content\":1},\"fcm_options\":{\"image\":\"http://127.0.0.1:$port/photo.jpg?hang=1\"}}" > "$tmp/hang.json"
started=$(date +%s%N)
"$bin" enrich "$tmp/hang.json" --deadline 300ms --allow-address 127.0.0.1/32 --media-dir "$tmp/m" --report "$tmp/hang-report.json" > "$tmp/hang-out" 2> /dev/null
code=$? elapsed=$(( ($(date +%s%N) - started) / 1000000 ))
check "a hanging origin: exit 0 with the original bytes" "[ $code -eq 0 ] && cmp -s $tmp/hang.json $tmp/hang-out"
check "a hanging origin: reason timeout" "grep -q '\"reason\":\"timeout\"' $tmp/hang-report.json"
check "a hanging origin: the process ends within 300 ms + 150 (took $elapsed ms)" "[ $elapsed -ge 300 ] && [ $elapsed -lt 450 ]"

finish cli
