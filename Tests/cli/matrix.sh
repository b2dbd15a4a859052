#!/usr/bin/env bash
# One answer, whatever the door: every payload in Samples/payloads through `attache enrich` with
# decoders in-process and sandboxed, through `attache serve` with a directory store and with
# SeaweedFS (S3), through `attache batch` and through `attache worker` on NATS JetStream, and the
# APNs- and FCM-shaped ones through `attache relay` to the provider doubles (what the double
# received is that cell's payload): the payload to send, its outcome and its reason are the same in
# every cell. One public base URL for all, so even the URLs agree (media is content-addressed); each
# door has a store of its own, so no door answers from another's work. Doors but enrich run with
# their default, sandboxed decoders.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/nats.sh"
source "$(dirname "$0")/seaweedfs.sh"
python=${ATTACHE_PYTHON:-.build/tools/bin/python}
pids=()
cleanup() { kill "$origin" "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
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

# The Attache-Outcome header of an answer, as "outcome;reason".
outcome_of() { tr -d '\r' < "$1" | sed -n 's/^[Aa]ttache-[Oo]utcome: //p' | sed 's/; reason=/;/'; }
# `attache serve` ($1: the cell's name; the rest: its options).
serve_cell() {
  local cell=$1 sport server
  shift
  sport=$(free_port)
  "$bin" serve --port "$sport" "${common[@]}" --media-dir "$tmp/media-$cell" "$@" > "$tmp/$cell.log" 2>&1 &
  server=$!
  for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$sport/healthz" && break; sleep 0.1; done
  mkdir -p "$tmp/cells/$cell"
  for p in "$tmp"/in/*.json; do
    name=$(basename "$p")
    curl -s -D "$tmp/headers" -o "$tmp/cells/$cell/$name" -H "Attache-Deadline-Ms: $deadline_ms" --data-binary @"$p" \
      "http://127.0.0.1:$sport/v1/enrich"
    outcome_of "$tmp/headers" > "$tmp/cells/$cell/$name.outcome"
  done
  kill -TERM "$server"; wait "$server"
}
serve_cell serve
doors=(enrich-in-process enrich-process serve)

# The same service on SeaweedFS, the S3 store replicas share.
if start_seaweedfs "$tmp/weed" media; then
  pids+=("$weed_pid")
  (export AWS_ACCESS_KEY_ID="$key" AWS_SECRET_ACCESS_KEY="$secret" AWS_REGION=us-east-1 AWS_ENDPOINT_URL_S3="$s3"
   serve_cell serve-s3 --store s3://media/matrix/)
  doors+=(serve-s3)
else
  echo "FAIL: SeaweedFS did not start (make test-deps)"; failed=$((failed + 1))
fi

# The worker, each payload a message with its name as id and the deadline in its header.
if start_nats "$tmp/nats" && "$python" -c 'import nats' 2>/dev/null; then
  pids+=("$nats_pid")
  "$bin" worker --nats "$nats" "${common[@]}" --media-dir "$tmp/media-worker" > "$tmp/worker.log" 2>&1 &
  pids+=($!)
  mkdir -p "$tmp/cells/worker"
  "$python" Samples/queue/pipeline.py files "$nats" "$tmp/in" "$tmp/cells/worker" "$deadline_ms"
  for f in "$tmp"/cells/worker/*.outcome; do sed -i 's/; reason=/;/' "$f"; done
  doors+=(worker)
else
  echo "FAIL: no nats-server or nats-py (make test-deps)"; failed=$((failed + 1))
fi

# The relay, in clear text in front of the APNs and FCM double: an FCM v1 send request to FCM's
# path, an APNs payload (an object with `aps`) to Apple's; what the double received is the payload.
relayed=()
for p in "$tmp"/in/*.json; do
  python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); sys.exit(0 if "aps" in r or "message" in r else 1)' "$p" \
    && relayed+=("$(basename "$p")")
done
uport=$(free_port) rport=$(free_port)
"$python" Tests/cli/providers.py upstream "$uport" "$tmp/upstream.jsonl" > "$tmp/upstream.log" 2>&1 &
pids+=($!)
"$bin" relay --port "$rport" "${common[@]}" --media-dir "$tmp/media-relay" --apns-upstream "http://127.0.0.1:$uport" \
  --fcm-upstream "http://127.0.0.1:$uport" > "$tmp/relay.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q listening "$tmp/upstream.log" 2>/dev/null && grep -q listening "$tmp/relay.log" && break; sleep 0.1; done
mkdir -p "$tmp/cells/relay"
for name in "${relayed[@]}"; do
  path=/3/device/abc
  grep -q '"message"' "$tmp/in/$name" && path=/v1/projects/acme-push/messages:send
  : > "$tmp/upstream.jsonl"
  curl -s --http2-prior-knowledge -D "$tmp/headers" -o /dev/null -H "authorization: bearer matrix" -H "apns-topic: com.example.app" \
    -H "Attache-Deadline-Ms: $deadline_ms" --data-binary @"$tmp/in/$name" "http://127.0.0.1:$rport$path"
  outcome_of "$tmp/headers" > "$tmp/cells/relay/$name.outcome"
  python3 -c 'import json, sys; sys.stdout.write(json.loads(open(sys.argv[1]).readline())["body"])' "$tmp/upstream.jsonl" \
    > "$tmp/cells/relay/$name" 2> /dev/null
done

"$bin" batch "$tmp/in" --output "$tmp/cells/batch" "${common[@]}" --deadline "${deadline_ms}ms" \
  --media-dir "$tmp/media-batch" > /dev/null 2>&1
doors+=(batch)
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
# The relay's column has the APNs- and FCM-shaped payloads only.
python3 - "$tmp/cells" "$tmp/in" "${doors[*]} relay" "${relayed[*]}" > "$tmp/matrix.out" <<'PY'
import json, os, sys
cells, inputs = sys.argv[1], sys.argv[2]
doors, relayed = sys.argv[3].split(), set(sys.argv[4].split())
bad = 0
for name in sorted(os.listdir(inputs)):
    answers = {}
    for door in doors:
        if door == "relay" and name not in relayed:
            continue
        try:
            outcome = open(os.path.join(cells, door, name + ".outcome")).read().strip()
            payload = json.load(open(os.path.join(cells, door, name)))
        except Exception as e:
            outcome, payload = "missing (%s)" % e, None
        if door == "serve-s3" and payload is not None:
            # Its keys are under the store's prefix, and so its URLs: the one difference allowed.
            payload = json.loads(json.dumps(payload).replace("https://cdn.example.com/media/matrix/", "https://cdn.example.com/media/"))
        answers[door] = (outcome, payload)
    first = answers[doors[0]]
    for door in doors[1:]:
        if door in answers and answers[door] != first:
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
check "every sample payload: one answer through ${doors[*]} and relay" "[ $status -eq 0 ]"
check "… the relay had ${#relayed[@]} of them" "[ ${#relayed[@]} -ge 20 ]"
check "… over $(ls "$tmp/in" | wc -l) payloads" "[ \$(grep -vc '^DIFF\|^   ' $tmp/matrix.out) -eq \$(ls $tmp/in | wc -l) ]"
check "AV1 in a WebM is enriched by the sandboxed decoders" "grep -q '^webm-av1.json *enriched' $tmp/matrix.out"
finish matrix
