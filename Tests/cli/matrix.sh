#!/usr/bin/env bash
# One answer, whatever the door: every payload in Samples/payloads through `attache enrich` with
# decoders in-process and sandboxed, through `attache serve` and through `attache batch` (both
# sandboxed, their default): the payload to send, its outcome and its reason are the same in every
# cell. One public base URL for all, so even the URLs agree (media is content-addressed); each door
# has a store of its own, so no door answers from another's work.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
cleanup() { kill "$origin" "${server:-}" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

start_origin
base=https://cdn.example.com/media
common=(--allow-address 127.0.0.1/32 --public-base-url "$base")
mkdir -p "$tmp/in" "$tmp/cells"
for p in Samples/payloads/*.json; do sed "s/127.0.0.1:8765/127.0.0.1:$port/g" "$p" > "$tmp/in/$(basename "$p")"; done
# The same deadline everywhere (Attache-Deadline-Ms for the service): long enough for every sample,
# so that only fallback-timeout.json (whose origin waits 5 s) depends on it.
deadline_ms=10000

for isolation in in-process process; do
  mkdir -p "$tmp/cells/enrich-$isolation"
  for p in "$tmp"/in/*.json; do
    name=$(basename "$p")
    "$bin" enrich "$p" "${common[@]}" --isolation "$isolation" --deadline "${deadline_ms}ms" \
      --media-dir "$tmp/media-enrich-$isolation" --report "$tmp/report.json" > "$tmp/cells/enrich-$isolation/$name" 2> /dev/null
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["outcome"] + (";" + r["reason"] if r.get("reason") else ""))' \
      "$tmp/report.json" > "$tmp/cells/enrich-$isolation/$name.outcome"
  done
done

sport=$(free_port)
"$bin" serve --port "$sport" "${common[@]}" --media-dir "$tmp/media-serve" > "$tmp/serve.log" 2>&1 &
server=$!
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$sport/healthz" && break; sleep 0.1; done
mkdir -p "$tmp/cells/serve"
for p in "$tmp"/in/*.json; do
  name=$(basename "$p")
  curl -s -D "$tmp/headers" -o "$tmp/cells/serve/$name" -H "Attache-Deadline-Ms: $deadline_ms" --data-binary @"$p" \
    "http://127.0.0.1:$sport/v1/enrich"
  tr -d '\r' < "$tmp/headers" | sed -n 's/^[Aa]ttache-[Oo]utcome: //p' | sed 's/; reason=/;/' > "$tmp/cells/serve/$name.outcome"
done
kill -TERM "$server"; wait "$server"; server=

"$bin" batch "$tmp/in" --output "$tmp/cells/batch" "${common[@]}" --deadline "${deadline_ms}ms" \
  --media-dir "$tmp/media-batch" > /dev/null 2>&1
python3 - "$tmp/cells/batch" <<'PY'
import json, sys, os
d = sys.argv[1]
for line in open(os.path.join(d, "report.jsonl")):
    e = json.loads(line)
    with open(os.path.join(d, e["source"] + ".outcome"), "w") as f:
        f.write(e["outcome"] + (";" + e["reason"] if e.get("reason") else "") + "\n")
PY

# Every cell against the first (enrich, in-process): the outcome and reason, and the payload as
# JSON (so a door's byte-level spelling of the same object would not count; none differs today).
python3 - "$tmp/cells" "$tmp/in" > "$tmp/matrix.out" <<'PY'
import json, os, sys
cells, inputs = sys.argv[1], sys.argv[2]
doors = ["enrich-in-process", "enrich-process", "serve", "batch"]
bad = 0
for name in sorted(os.listdir(inputs)):
    answers = {}
    for door in doors:
        try:
            outcome = open(os.path.join(cells, door, name + ".outcome")).read().strip()
            payload = json.load(open(os.path.join(cells, door, name)))
        except Exception as e:
            outcome, payload = "missing (%s)" % e, None
        answers[door] = (outcome, payload)
    first = answers[doors[0]]
    for door in doors[1:]:
        if answers[door] != first:
            bad += 1
            what = "outcome %s against %s" % (answers[door][0], first[0]) if answers[door][0] != first[0] else "payload differs"
            print("DIFF %s: %s, %s: %s" % (name, door, doors[0], what))
            if answers[door][0] == first[0]:
                print("   %s: %s" % (doors[0], json.dumps(first[1])[:600]))
                print("   %s: %s" % (door, json.dumps(answers[door][1])[:600]))
    print("%-32s %s" % (name, first[0]))
sys.exit(1 if bad else 0)
PY
status=$?
grep DIFF -A2 "$tmp/matrix.out"
check "every sample payload: one answer through enrich (in-process, sandboxed), serve and batch" "[ $status -eq 0 ]"
check "… over $(ls "$tmp/in" | wc -l) payloads" "[ \$(grep -vc '^DIFF\|^   ' $tmp/matrix.out) -eq \$(ls $tmp/in | wc -l) ]"
check "AV1 in a WebM is enriched by the sandboxed decoders" "grep -q '^webm-av1.json *enriched' $tmp/matrix.out"
finish matrix
