#!/usr/bin/env bash
# The shell blocks of the README and of docs/*.md, run as written, in order, one shell per file —
# as a new user pastes them after `make demo` — each file in a scratch directory that has the
# checkout's Samples, Tests and release build, so what they write (./attache-media, send.jsonl,
# relay.pem, timeline.svg) stays out of the checkout. A page of docs/ is read after the README's set-up (its
# block that puts attache on PATH and starts the sample origin), as its text says.
# - A block preceded by `<!-- not run by Tests/cli/documents.sh: why -->` is skipped, with its reason.
# - A block whose lines start with `$ ` is a transcript: each command runs, and what it printed must
#   read as the lines shown under it (runs of 16 or more letters, digits, `_` and `-`, which tokens
#   and hashes are, may differ).
# - After a line that starts something in the background (`… &`) the shell waits a second, as a
#   person pasting does.
# A block that fails names its file and line; then what the blocks printed is checked where the
# text promises something (every sample enriched, not `address-denied`).
set -uo pipefail
source "$(dirname "$0")/lib.sh"
root=$PWD
marker='not run by Tests/cli/documents.sh'

# The blocks of a Markdown file, one JSON object a line: line (of the first command), skip (the
# marker's reason) and text.
blocks() {
  python3 - "$1" "$marker" <<'PY'
import json, re, sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
i, skip = 0, None
while i < len(lines):
    m = re.match(r"<!-- %s: (.*) -->" % re.escape(sys.argv[2]), lines[i])
    if m:
        skip = m.group(1)
    elif lines[i].strip() == "```sh":
        start, body = i + 2, []
        i += 1
        while lines[i].strip() != "```":
            body.append(lines[i]); i += 1
        print(json.dumps({"line": start, "skip": skip, "text": "\n".join(body)}))
        skip = None
    elif lines[i].strip().startswith("```"):
        skip = None
    i += 1
PY
}
field() { python3 -c 'import json,sys; v=json.loads(sys.argv[1])[sys.argv[2]]; print("" if v is None else v)' "$1" "$2"; }

# A transcript block: each `$ command` runs; its output is compared with the lines shown.
transcript() { # file line text
  python3 - "$@" <<'PY'
import re, subprocess, sys
name, line, text = sys.argv[1], int(sys.argv[2]), sys.argv[3]
steps = []
for row in text.split("\n"):
    if row.startswith("$ "):
        steps.append((row[2:], []))
    elif steps:
        steps[-1][1].append(row)
mask = lambda s: re.sub(r"[A-Za-z0-9_-]{16,}", "…", s.rstrip())
status = 0
for command, shown in steps:
    got = subprocess.run(command, shell=True, capture_output=True, text=True)
    printed = (got.stdout + got.stderr).rstrip("\n").split("\n")
    if [mask(s) for s in printed] != [mask(s) for s in shown]:
        print("%s:%d: `%s` printed\n%s\nwhere the text shows\n%s" % (name, line, command, "\n".join(printed), "\n".join(shown)))
        status = 1
sys.exit(status)
PY
}

# Everything a file's blocks started in the background, and what those started (attache serve's
# attache-serve, the decoder helpers).
stop_background() {
  pkill -TERM -P "$$" 2>/dev/null
  for p in $(jobs -p); do pkill -TERM -P "$p" 2>/dev/null; kill -TERM "$p" 2>/dev/null; done
  sleep 0.5
  pkill -KILL -f "$tmp/run-" 2>/dev/null
  pkill -f "nats-server -js -a 127.0.0.1 -p 4222 -sd /tmp/attache-nats" 2>/dev/null
  wait 2>/dev/null
}
cleanup() { stop_background; [ -n "${KEEP:-}" ] || rm -rf "$tmp" /tmp/attache-nats; }
trap cleanup EXIT

# Runs a Markdown file's blocks in a fresh scratch directory; a block's output is in
# $tmp/<file>.<line>.out. Prints the scratch directory's path in $run.
n=0
run_file() { # file [prelude-file]
  local file=$1 name=${1//\//-}
  run=$tmp/run-${name%.md}
  mkdir -p "$run/.build"
  ln -s "$root/Samples" "$run/Samples"
  ln -s "$root/Tests" "$run/Tests"
  ln -s "$root/.build/release" "$run/.build/release"
  [ -d "$root/.build/tools" ] && ln -s "$root/.build/tools" "$run/.build/tools"
  blocks "$root/$file" > "$tmp/blocks"
  cd "$run"
  [ -n "${2:-}" ] && source "$2" > "$tmp/prelude.out" 2>&1 < /dev/null
  while IFS= read -r block; do
    local line skip text status
    line=$(field "$block" line); skip=$(field "$block" skip); text=$(field "$block" text)
    if [ -n "$skip" ]; then echo "$file:$line: not run ($skip)"; continue; fi
    n=$((n + 1))
    if [[ $text == '$ '* ]]; then
      transcript "$file" "$line" "$text" > "$tmp/$name.$line.out" 2>&1
      status=$?
      check "$file:$line: the transcript reads as shown ($(cat "$tmp/$name.$line.out"))" "[ $status -eq 0 ]"
      continue
    fi
    printf '%s\n' "$text" | sed -E 's/&([[:space:]]*(#.*)?)$/\&\1\nsleep 1/' > "$tmp/block.sh"
    # Sourced, so that what a block exports or starts stays for the blocks after it.
    source "$tmp/block.sh" > "$tmp/$name.$line.out" 2>&1 < /dev/null
    status=$?
    check "$file:$line: the block runs (exit $status; $(tail -c 300 "$tmp/$name.$line.out" | tr '\n' ' '))" "[ $status -eq 0 ]"
  done < "$tmp/blocks"
  cd "$root"
}
# The output of the block whose first command contains $2, in file $1.
out() { local line; line=$(grep -n -F -- "$2" "$1" | head -1 | cut -d: -f1); cat "$tmp/${1//\//-}.$line.out" 2>/dev/null; }

# The README, as a new user reads it.
run_file README.md
readme=$run
check "enrich: three payloads, each with attachments" "[ \$(out README.md 'attache enrich Samples/payloads/fcm.json --deadline 2s' | grep -c '\"attachments\"') -eq 3 ]"
check "enrich: the report says enriched" "out README.md 'attache enrich Samples/payloads/fcm.json --deadline 2s' | grep -q '\"outcome\":\"enriched\"'"
check "enrich: with a base URL, URLs under it" "out README.md 'attache enrich Samples/payloads/fcm.json --deadline 2s' | grep -q 'https://cdn.example.com/media/'"
check "serve: Attache-Outcome: enriched" "out README.md 'attache serve --port 8080' | tr -d '\r' | grep -q '^Attache-Outcome: enriched'"
check "worker: the payload read back is enriched ($(out README.md 'nats-server -js -a 127.0.0.1' | tail -c 200))" \
  "out README.md 'nats-server -js -a 127.0.0.1' | grep -q '^p0  enriched  {'"
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$readme/relay.pem" https://localhost:8443/ 2>/dev/null)
check "relay: answers over TLS with the certificate made above (HTTP $code)" "[ '$code' != 000 ]"
check "batch: 12 payloads to send, and the rejected line reported" \
  "[ \$(wc -l < $readme/send.jsonl) -eq 12 ] && grep -q '\"line\":7,.*\"rejected\"' $readme/send.jsonl.report.jsonl"
check "batch: each sample fetched" "! grep -q 'address-denied' $readme/send.jsonl.report.jsonl"
check "timeline: the SVG is drawn" "grep -q '<svg' $readme/timeline.svg"
stop_background

# Each page of docs/ with shell blocks, after the README's set-up.

setup=$tmp/setup.sh
blocks README.md | while IFS= read -r block; do
  text=$(field "$block" text); [[ $text == *'attache origin --root Samples/media'* ]] && printf '%s\n' "$text" > "$setup"
done
check "the README has a set-up block that starts the sample origin" "[ -s '$setup' ]"
for page in docs/*.md; do
  grep -q '^```sh' "$page" || continue
  run_file "$page" "$setup"
  case $page in
    docs/commands.md)
      check "commands: the payload is enriched, its URLs under the base" "out $page 'attache enrich Samples' | grep -q 'https://cdn.example.com/media/'" ;;
    docs/batch.md)
      check "batch: every payload to send, none fetched twice" "[ \$(wc -l < $run/send.jsonl) -eq 12 ] && ! grep -q 'address-denied' $run/send.jsonl.report.jsonl"
      check "batch: a directory in, a file each out" "[ \$(ls $run/ready/*.json | wc -l) -eq \$(ls Samples/payloads/*.json | wc -l) ]"
      check "batch: a shard of the eight" "[ -s $run/part-2.jsonl ] && [ \$(wc -l < $run/part-2.jsonl) -lt 12 ]" ;;
    docs/relay.md)
      check "relay: the client is told enriched" "out $page '.build/tools/bin/python Tests/cli/providers.py' | tr -d '\r' | grep -q -i '^attache-outcome: enriched'"
      check "relay: the double received the payload with its attachments" "tail -n 1 $run/received.jsonl | grep -q 'https://cdn.example.com/media/'" ;;
    docs/service.md)
      check "service: the answer is the enriched payload" "out $page 'TOKEN=' | grep -q '\"attachments\"'" ;;
  esac
  stop_background
done
check "$n blocks ran" "[ $n -ge 12 ]"
finish documents
