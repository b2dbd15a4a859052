#!/usr/bin/env bash
# The README's shell blocks, run as written, in order, in one shell — as a new user pastes them
# after `make demo` — in a scratch directory that has the checkout's Samples and release build, so
# what they write (./attache-media, send.jsonl, relay.pem, timeline.svg) stays out of the checkout.
# A block preceded by `<!-- not run by Tests/cli/readme.sh: why -->` is skipped, with its reason.
# After a line that starts something in the background (`… &`) the shell waits a second, as a
# person pasting does. A block that fails names README.md and its line; then what the blocks
# printed is checked: every sample enriched, not `address-denied`.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
root=$PWD
run=$tmp/readme
mkdir -p "$run/.build"
ln -s "$root/Samples" "$run/Samples"
ln -s "$root/.build/release" "$run/.build/release"
[ -d "$root/.build/tools" ] && ln -s "$root/.build/tools" "$run/.build/tools"
cleanup() {
  # Everything the blocks started in the background, and what those started (attache serve's
  # attache-serve, the decoder helpers).
  pkill -TERM -P "$$" 2>/dev/null
  for p in $(jobs -p); do pkill -TERM -P "$p" 2>/dev/null; kill -TERM "$p" 2>/dev/null; done
  sleep 0.5
  pkill -KILL -f "$run" 2>/dev/null
  pkill -f "nats-server -js -a 127.0.0.1 -p 4222 -sd /tmp/attache-nats" 2>/dev/null
  rm -rf "$tmp" /tmp/attache-nats
}
trap cleanup EXIT

# Blocks as (first line number, skip reason, text), from the Markdown.
python3 - README.md > "$tmp/blocks" <<'PY'
import json, re, sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
i, skip = 0, None
while i < len(lines):
    m = re.match(r"<!-- not run by Tests/cli/readme.sh: (.*) -->", lines[i])
    if m:
        skip = m.group(1)
    elif lines[i].strip() == "```sh":
        start, body = i + 2, []
        i += 1
        while lines[i].strip() != "```":
            body.append(lines[i]); i += 1
        print(json.dumps({"line": start, "skip": skip, "text": "\n".join(body)}))
        skip = None
    i += 1
PY
cd "$run"
n=0
while IFS= read -r block; do
  line=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["line"])' "$block")
  skip=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["skip"] or "")' "$block")
  if [ -n "$skip" ]; then echo "README.md:$line: not run ($skip)"; continue; fi
  python3 -c 'import json,sys; print(json.loads(sys.argv[1])["text"])' "$block" \
    | sed -E 's/&([[:space:]]*(#.*)?)$/\&\1\nsleep 1/' > "$tmp/block.$line.sh"
  n=$((n + 1))
  # Sourced, so that what a block exports or starts stays for the blocks after it.
  source "$tmp/block.$line.sh" > "$tmp/out.$line" 2>&1 < /dev/null
  status=$?
  check "README.md:$line: the block runs (exit $status; $(tail -c 300 "$tmp/out.$line" | tr '\n' ' '))" "[ $status -eq 0 ]"
done < "$tmp/blocks"
cd "$root"
out() { cat "$tmp/out.$1" 2>/dev/null; }
line_of() { grep -n -F -- "$1" README.md | head -1 | cut -d: -f1; }
enrich=$(line_of "attache enrich Samples/payloads/fcm.json --deadline 2s")
check "enrich: three payloads, each with attachments" "[ \$(grep -c '\"attachments\"' $tmp/out.$enrich) -eq 3 ]"
check "enrich: the report says enriched" "grep -q '\"outcome\":\"enriched\"' $tmp/out.$enrich"
check "enrich: with a base URL, URLs under it" "grep -q 'https://cdn.example.com/media/' $tmp/out.$enrich"
serve=$(line_of "attache serve --port 8080")
check "serve: Attache-Outcome: enriched" "grep -q '^Attache-Outcome: enriched' <(tr -d '\r' < $tmp/out.$serve)"
worker=$(line_of "nats-server -js -a 127.0.0.1")
check "worker: the payload read back is enriched ($(out $worker | tail -c 200))" "grep -q '^p0  enriched  {' $tmp/out.$worker"
relay=$(line_of "openssl req -x509")
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$run/relay.pem" https://localhost:8443/ 2>/dev/null)
check "relay: answers over TLS with the certificate made above (HTTP $code)" "[ '$code' != 000 ]"
batch=$(line_of "attache batch Samples/campaign.jsonl")
check "batch: 12 payloads to send, and the rejected line reported" \
  "[ \$(wc -l < $run/send.jsonl) -eq 12 ] && grep -q '\"line\":7,.*\"rejected\"' $run/send.jsonl.report.jsonl"
check "batch: each sample fetched" "! grep -q 'address-denied' $run/send.jsonl.report.jsonl"
check "timeline: the SVG is drawn" "grep -q '<svg' $run/timeline.svg"
check "$n blocks ran" "[ $n -ge 7 ]"
finish readme
