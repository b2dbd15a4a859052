#!/usr/bin/env bash
# `attache batch` as a process: killed with SIGKILL halfway, then --resume, yields the same output
# as an uninterrupted run, byte for byte; a line that is not a payload is reported by number.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
trap 'kill $origin 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT

start_origin

# Proxy variables in the environment are ignored (port 9 on loopback would refuse the connection).
echo "{\"aps\":{\"alert\":\"p\",\"mutable-content\":1},\"media-url\":\"http://127.0.0.1:$port/alpha.png\"}" \
  | http_proxy=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 ALL_PROXY=http://127.0.0.1:9 \
    "$bin" enrich - --allow-address 127.0.0.1/32 --media-dir "$tmp/media" > "$tmp/proxied.json" 2>/dev/null
check "proxy environment variables are ignored" "grep -q '\"attachments\"' $tmp/proxied.json"

# 300 payloads over 60 distinct URLs, each URL 100 ms slow: a few seconds in all, 2 at a time.
for i in $(seq 0 299); do
  [ "$i" = 150 ] && echo "not a payload"
  echo "{\"aps\":{\"alert\":\"n$i\",\"mutable-content\":1},\"media-url\":\"http://127.0.0.1:$port/alpha.png?delay=100&u=$((i % 60))\",\"n\":$i}"
done > "$tmp/in.jsonl"
# Each run stores into a media directory of its own: a store keeps what each URL rendered to
# (results/), and a second run over the same one would fetch nothing and end before the kill.
# The public base URL keeps the payloads' URLs the same whatever the directory.
run() { "$bin" batch "$tmp/in.jsonl" --allow-address 127.0.0.1/32 --public-base-url http://cdn.test/media --concurrency 2 "$@" 2>> "$tmp/batch.log"; }

run --media-dir "$tmp/media-whole" --output "$tmp/whole.jsonl"
check "uninterrupted batch exits 0" "[ $? -eq 0 ]"
check "300 payloads out" "[ \$(wc -l < $tmp/whole.jsonl) -eq 300 ]"
check "the rejected line is reported as line 151" "grep -q '{\"line\":151,.*\"outcome\":\"rejected\"' $tmp/whole.jsonl.report.jsonl"

# The process itself, not a subshell around it, gets the SIGKILL.
"$bin" batch "$tmp/in.jsonl" --allow-address 127.0.0.1/32 --public-base-url http://cdn.test/media --media-dir "$tmp/media-cut" \
  --concurrency 2 --output "$tmp/cut.jsonl" 2>> "$tmp/batch.log" &
pid=$!
# Killed once some payloads are done (the ledger has lines), not after a fixed sleep.
for _ in $(seq 300); do [ -s "$tmp/cut.jsonl.report.jsonl" ] && break; sleep 0.02; done
kill -9 "$pid" 2>/dev/null  # bash reports this job as "Killed": that is the test's own SIGKILL
wait "$pid" 2>/dev/null
done_before=$(wc -l < "$tmp/cut.jsonl.report.jsonl")
check "the kill came halfway ($done_before of 301 done)" "[ $done_before -gt 0 ] && [ $done_before -lt 301 ]"
run --media-dir "$tmp/media-cut" --output "$tmp/cut.jsonl" --resume
check "resume exits 0" "[ $? -eq 0 ]"
check "resumed output equals the uninterrupted one, byte for byte" "cmp -s $tmp/whole.jsonl $tmp/cut.jsonl"
check "one ledger line per input line" "[ \$(wc -l < $tmp/cut.jsonl.report.jsonl) -eq 301 ]"
check "no half line anywhere" "[ -z \"\$(tail -c1 $tmp/cut.jsonl | tr -d '\n')\" ]"

# Any two of input, output, report and rejects naming one file are refused before anything is
# written: the input stays as it was, exit status 1, nothing created.
printf '%s\n' '{"aps":{"alert":"a","mutable-content":1}}' '{"aps":{"alert":"b"}}' '{"aps":{"alert":"c"}}' > "$tmp/same-in.jsonl"
cp "$tmp/same-in.jsonl" "$tmp/same-in.orig"
ln -s same-in.jsonl "$tmp/same-link.jsonl"
ln "$tmp/same-in.jsonl" "$tmp/same-hard.jsonl"
refused() {  # name, arguments after the input
  local name=$1
  shift
  rm -rf "$tmp/same-out" && mkdir "$tmp/same-out"
  "$bin" batch "$tmp/same-in.jsonl" --media-dir "$tmp/same-out/media" "$@" > /dev/null 2> "$tmp/same.err"
  local status=$?
  check "$name: refused (exit $status)" "[ $status -ne 0 ] && grep -q 'same file' $tmp/same.err"
  check "$name: the input is untouched" "cmp -s $tmp/same-in.jsonl $tmp/same-in.orig"
  check "$name: nothing created" "[ -z \"\$(ls -A $tmp/same-out)\" ]"
}
o="$tmp/same-out"
refused "input = output" --output "$tmp/same-in.jsonl"
refused "input = report" --output "$o/x.jsonl" --report "$tmp/same-in.jsonl"
refused "input = rejects" --output "$o/x.jsonl" --rejects "$tmp/same-in.jsonl"
refused "input = output through a symlink" --output "$tmp/same-link.jsonl"
refused "input = rejects through a hard link" --output "$o/x.jsonl" --rejects "$tmp/same-hard.jsonl"
refused "input = report by another spelling" --output "$o/x.jsonl" --report "$tmp/../$(basename "$tmp")/same-in.jsonl"
refused "output = report, not yet there" --output "$o/x.jsonl" --report "$o/x.jsonl"
refused "output = rejects, not yet there" --output "$o/x.jsonl" --rejects "$o/./x.jsonl"
refused "report = rejects, not yet there" --output "$o/x.jsonl" --report "$o/r.jsonl" --rejects "$o/r.jsonl"
mkdir -p "$tmp/same-dir" && cp Samples/payloads/generic.json "$tmp/same-dir/"
cp -r "$tmp/same-dir" "$tmp/same-dir.orig"
"$bin" batch "$tmp/same-dir" --output "$tmp/same-dir" --media-dir "$tmp/same-dir-media" > /dev/null 2>&1
check "a directory batch into its own input directory is refused" "[ $? -ne 0 ] && diff -r $tmp/same-dir $tmp/same-dir.orig > /dev/null"
"$bin" batch "$tmp/same-in.jsonl" --output "$o/x.jsonl" --media-dir "$o/media" > /dev/null 2>&1
check "distinct files run (exit $?)" "[ -s $o/x.jsonl ] && [ -s $o/x.jsonl.report.jsonl ]"
finish batch
