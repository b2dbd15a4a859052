#!/usr/bin/env bash
# `attache worker` on a real nats-server with JetStream (`make test-deps`): 600 payloads with ids
# published; a worker killed with SIGKILL part-way and restarted beside a second one; ATTACHE_OUT
# then holds each input id exactly once, every output a JSON object. A message whose deadline passed
# while it waited is the original at once; SIGTERM exits 0; /healthz and /metrics on their port.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
python=${ATTACHE_PYTHON:-.build/tools/bin/python}
source "$(dirname "$0")/nats.sh"
pids=()
trap 'kill -9 "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
"$python" -c 'import nats' 2>/dev/null || { echo "FAIL: no nats-py in $python: run make test-deps"; exit 1; }
pipeline() { "$python" Samples/queue/pipeline.py "$@"; }

start_nats "$tmp" || { echo "FAIL: no nats-server"; exit 1; }
pids+=("$nats_pid")
# The origin: one that logs every request, to count fetches.
port=$(free_port)
python3 -m http.server --bind 127.0.0.1 "$port" --directory Samples/media > "$tmp/origin.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
origin_requests() { grep -c "GET /$1" "$tmp/origin.log"; }

start_worker() {  # name, extra options... → $worker (its pid)
  local name=$1
  shift
  "$bin" worker --nats "$nats" --media-dir "$tmp/media-$name" --allow-address 127.0.0.1/32 --deadline 20s \
    --ack-wait 4s "$@" > "$tmp/$name.log" 2>&1 &
  worker=$!
  pids+=("$worker")
}

# Distinct URLs: every payload is a download and a render, so the kill lands mid-stream. The fault
# origin holds each answer 100 ms, so that 600 payloads take 3.75 s at least at 16 in flight
# however fast the machine renders (on a fast one they had all gone out before the kill).
slow_port=$(free_port)
"$bin" origin --root Samples/media --port "$slow_port" > "$tmp/slow-origin.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do grep -q listening "$tmp/slow-origin.log" 2>/dev/null && break; sleep 0.1; done
pipeline publish "$nats" 600 "{\"aps\":{\"alert\":\"{i}\",\"mutable-content\":1},\"image-url\":\"http://127.0.0.1:$slow_port/photo.jpg?n={i}&delay=100\"}"
# An ack wait of 12 s leaves each message 6 s from its publish: with 4 s, the 1 s left sent every
# message still waiting out at once as the original (a correct fallback, but one that ended the
# stream before the kill could land in it).
# Killed at the tenth output: every message was published at once, so whatever is not out by its
# 6 s goes out together as the original; on a loaded machine (a few outputs a second) waiting
# for more let that moment pass between two counts, and all 600 were out before the kill.
start_worker a --concurrency 16 --ack-wait 12s; a=$worker
for _ in $(seq 300); do [ "$(pipeline count "$nats")" -ge 10 ] && break; sleep 0.1; done
before=$(pipeline count "$nats")
kill -9 "$a"
wait "$a" 2>/dev/null
check "the first worker was killed part-way (outputs when killed: $before)" "[ $before -ge 1 ] && [ $before -lt 600 ]"
start_worker a2 --concurrency 16 --ack-wait 12s; a=$worker
start_worker b --concurrency 16 --ack-wait 12s --metrics-port "$(free_port)"; b=$worker
for _ in $(seq 600); do [ "$(pipeline count "$nats")" -ge 600 ] && break; sleep 0.1; done
sleep 1  # a redelivered message published twice would land by now
result=$(pipeline check "$nats" 600)
check "ATTACHE_OUT holds every id exactly once, each a JSON object ($result)" "pipeline check $nats 600 > /dev/null"

# A message that waited past its deadline in the stream: the original, at once, no fetch.
late="{\"aps\":{\"alert\":\"late\",\"mutable-content\":1},\"image-url\":\"http://127.0.0.1:$port/animated.gif\"}"
kill -TERM "$a" "$b"
wait "$a"; rc_a=$?
wait "$b"; rc_b=$?
check "SIGTERM: the workers exit 0 (got $rc_a, $rc_b)" "[ $rc_a = 0 ] && [ $rc_b = 0 ]"
"$python" - "$nats" "$late" > "$tmp/late.out" <<'PY'
import asyncio, sys, time, nats
async def main(url, payload):
    nc = await nats.connect(url)
    js = nc.jetstream()
    await js.publish("attache.in", payload.encode(), headers={"Nats-Msg-Id": "late", "Attache-Deadline-Ms": "200"})
    await nc.close()
asyncio.run(main(sys.argv[1], sys.argv[2]))
PY
sleep 0.5
gets_before=$(origin_requests animated.gif)
mport2=$(free_port)
start_worker c --metrics-port "$mport2"; c=$worker
"$python" - "$nats" > "$tmp/late.json" <<'PY'
import asyncio, json, sys, nats
async def main(url):
    nc = await nats.connect(url)
    js = nc.jetstream()
    for _ in range(100):
        info = await js.stream_info("ATTACHE_OUT")
        m = await js.get_msg("ATTACHE_OUT", info.state.last_seq)
        if m.headers.get("Attache-Source-Id") == "late":
            print(json.dumps({"outcome": m.headers["Attache-Outcome"], "data": m.data.decode()}))
            break
        await asyncio.sleep(0.1)
    await nc.close()
asyncio.run(main(sys.argv[1]))
PY
late_outcome=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["outcome"])' "$tmp/late.json" 2>/dev/null)
late_data=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["data"])' "$tmp/late.json" 2>/dev/null)
check "a message already late goes out as the original, reason timeout (got '$late_outcome')" "[ '$late_outcome' = 'fallback; reason=timeout' ]"
check "… byte for byte" "[ '$late_data' = '$late' ]"
check "… without a fetch" "[ $(origin_requests animated.gif) = $gets_before ]"
health=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$mport2/healthz")
check "/healthz on the metrics port is 200 while connected (got $health)" "[ $health = 200 ]"
check "/metrics counts what was consumed" "curl -s http://127.0.0.1:$mport2/metrics | grep '^attache_queue_consumed_total' >/dev/null"

kill -TERM "$c"; wait "$c"

# Headers read as sent, whatever the other headers' values: empty, blank, repeated (the first
# counts), more digits than any deadline (capped, not the default), a no-break space (not 5).
# A worker of its own, whose default (300 ms) is below its longest deadline.
start_worker h --deadline 300ms --ack-wait 12s; h=$worker
"$python" Tests/cli/nats-headers.py "$nats" '{"aps":{"alert":"h","mutable-content":1}}' > "$tmp/headers.out"
header() { python3 -c 'import json,sys
for l in open(sys.argv[1]):
    a = json.loads(l)
    if a["id"] == sys.argv[2]: print((a["headers"] or {}).get(sys.argv[3], "none"))' "$tmp/headers.out" "$1" "$2"; }
default_ms=$(header hdr-plain Attache-Deadline-Ms)
for id in hdr-empty-last hdr-empty-middle hdr-empty-nospace hdr-blank; do
  check "$id: the message id is the source id (got $(header $id Attache-Source-Id))" "[ '$(header $id Attache-Source-Id)' = $id ]"
  check "$id: the deadline header is read: 1 ms (got $(header $id Attache-Deadline-Ms))" "[ '$(header $id Attache-Deadline-Ms)' = 1 ]"
done
check "a repeated deadline header: the first counts (got $(header hdr-repeated Attache-Deadline-Ms))" "[ '$(header hdr-repeated Attache-Deadline-Ms)' = 1 ]"
check "23 digits are capped like any long deadline ($(header hdr-23-digits Attache-Deadline-Ms) = $(header hdr-huge Attache-Deadline-Ms), default $default_ms)" \
  "[ '$(header hdr-23-digits Attache-Deadline-Ms)' = '$(header hdr-huge Attache-Deadline-Ms)' ] && [ '$(header hdr-huge Attache-Deadline-Ms)' != '$default_ms' ]"
check "5 and a no-break space is not 5: the default (got $(header hdr-nbsp Attache-Deadline-Ms))" "[ '$(header hdr-nbsp Attache-Deadline-Ms)' = '$default_ms' ]"
check "a malformed deadline is logged with the message id" "grep -q 'malformed Attache-Deadline-Ms.*hdr-nbsp\\|hdr-nbsp.*malformed Attache-Deadline-Ms' $tmp/h.log"
kill -TERM "$h"; wait "$h"

# Heavy work never holds every decoder helper: 24 movies decoded 300 frames forward (0.7 s each
# in a release build here: 8 s of both helpers, were they free to take them) published first, then
# 16 photos with a 5 s deadline: every photo goes out enriched.
# A stream of its own, whose consumer takes all 40 at once: what is measured is the decoders, not
# how many messages the shared consumer lets one worker hold.
start_worker m --poster exact --decoders 2 --input-stream MIX_IN --input-subject mix.in --consumer mix \
  --concurrency 64 --ack-wait 40s; m=$worker
"$python" - "$nats" "$slow_port" > "$tmp/mix.out" 2>&1 <<'PY'
import asyncio, json, sys, nats
sys.path.insert(0, "Samples/queue")
from pipeline import outputs_of
async def main(url, port):
    nc = await nats.connect(url)
    js = nc.jetstream()
    for _ in range(100):  # the worker makes MIX_IN as it starts
        try:
            await js.stream_info("MIX_IN")
            break
        except Exception:
            await asyncio.sleep(0.1)
    for i in range(24):
        movie = {"aps": {"alert": f"h{i}", "mutable-content": 1},
                 "com.urbanairship.media_attachment": {"url": f"http://127.0.0.1:{port}/gop10s-1080p.mp4?mix={i}", "options": {"time": 9.5}}}
        await js.publish("mix.in", json.dumps(movie).encode(), headers={"Nats-Msg-Id": f"mix-h{i}", "Attache-Deadline-Ms": "20000"})
    await asyncio.sleep(1.5)  # the movies are fetched and queued first
    for i in range(16):
        photo = {"aps": {"alert": f"s{i}", "mutable-content": 1}, "image-url": f"http://127.0.0.1:{port}/photo.jpg?mix={i}"}
        await js.publish("mix.in", json.dumps(photo).encode(), headers={"Nats-Msg-Id": f"mix-s{i}", "Attache-Deadline-Ms": "5000"})
    for source, headers in sorted((await outputs_of(js, "mix-s", 16, timeout=60)).items()):
        print(source, headers.get("Attache-Outcome"))
    await nc.close()
asyncio.run(main(sys.argv[1], sys.argv[2]))
PY
check "through the worker, with 24 heavy movies in the helpers, all 16 photos were enriched within 5 s ($(awk '{print $2}' "$tmp/mix.out" | sort | uniq -c | tr '\n' ' '))" \
  "[ \$(grep -c '^mix-s[0-9]* enriched$' $tmp/mix.out) -eq 16 ]"
kill -TERM "$m"; wait "$m"

# SIGTERM with messages in flight: the worker finishes them, publishes, acks, and exits 0 —
# nothing is left pending for the stream to deliver again.
pipeline publish "$nats" 40 "{\"aps\":{\"alert\":\"t{i}\",\"mutable-content\":1},\"image-url\":\"http://127.0.0.1:$port/photo.jpg?t={i}\"}" 2>/dev/null
start_worker e --concurrency 8; e=$worker
outputs_before=$(pipeline count "$nats")
for _ in $(seq 300); do [ "$(pipeline count "$nats")" -gt "$outputs_before" ] && break; sleep 0.05; done
kill -TERM "$e"
wait "$e"; rc_e=$?
pending=$("$python" - "$nats" <<'PY'
import asyncio, sys, nats
async def main(url):
    nc = await nats.connect(url)
    info = await nc.jetstream().consumer_info("ATTACHE_IN", "attache")
    print(info.num_ack_pending)
    await nc.close()
asyncio.run(main(sys.argv[1]))
PY
)
check "SIGTERM mid-stream: exit 0 (got $rc_e)" "[ $rc_e = 0 ]"
check "… and every message it took was answered and acked (ack pending: $pending)" "[ '$pending' = 0 ]"

# The README's example: publish a payload, read what to send.
timeout 60 "$python" - "$nats" "$port" > "$tmp/example.out" 2>&1 <<'PY' &
import asyncio, sys
sys.path.insert(0, "Samples/queue")
import nats
from pipeline import ensure_input_stream, publish, read
async def main(url, port):
    nc = await nats.connect(url)
    js = nc.jetstream()
    await ensure_input_stream(js)
    await publish(js, ('{"aps":{"alert":"Hi","mutable-content":1},"image-url":"http://127.0.0.1:%s/photo.jpg"}' % port).encode(), "order-42")
    async for source, outcome, payload in read(js):
        if source == "order-42":
            print(outcome)
            break
    await nc.close()
asyncio.run(main(sys.argv[1], sys.argv[2]))
PY
example=$!
start_worker d; d=$worker
wait "$example"
check "the README's pipeline example reads its payload back enriched (got '$(cat "$tmp/example.out")')" "grep -qx enriched $tmp/example.out"
kill -TERM "$d"; wait "$d"
# When something failed, what the workers said (a crash's message and stack are in their logs).
if [ "$failed" -gt 0 ]; then
  # A crashed worker's log ends in the Swift backtracer's registers and images: its crashed
  # thread's frames come first (the rare SIGABRT at SIGTERM has been seen only as registers).
  for log in "$tmp"/*.log; do
    echo "--- $log"
    grep -q 'Program crashed' "$log" && sed -n '/Program crashed/,/^Registers/p' "$log" | head -n 80
    tail -n 30 "$log"
  done
fi
finish worker
