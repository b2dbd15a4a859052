#!/usr/bin/env bash
# OpenTelemetry traces against a real OTLP/HTTP receiver (Tests/cli/otlp.py, which decodes what
# arrives with the opentelemetry-proto package, make test-deps): a payload enriched through the
# service, the relay and the worker, each with the caller's `traceparent` (an HTTP header, or the
# JetStream message's header), exports the span tree under the caller's span — the payload, its
# attachment (URL without its query), the stages — with the standard OTEL_* variables only. The
# worker's output message carries the publisher's context on; aioapns, as written for Apple, gets
# its notification sent through a traced TLS relay, whose tree starts a trace of its own; the logs
# carry the trace id; spans reach a collector restarted between batches, and one over https; and
# with no OTEL_* variable, nothing is exported.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/nats.sh"
python=${ATTACHE_PYTHON:-.build/tools/bin/python}
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
"$python" -c 'import opentelemetry.proto, nats' 2>/dev/null || { echo "FAIL: no opentelemetry-proto or nats-py in $python: run make test-deps"; exit 1; }

start_origin; pids+=("$origin")
oport=$(free_port)
receive() {
  "$python" Tests/cli/otlp.py serve "$oport" "$tmp/spans.jsonl" > "$tmp/otlp.log" 2>&1 &
  receiver=$!
  pids+=($!)
  for _ in $(seq 100); do grep -q listening "$tmp/otlp.log" 2>/dev/null && break; sleep 0.05; done
}
receive
touch "$tmp/spans.jsonl"
# The standard variable, as a deployment sets it, and nothing else (spans leave every 5 s).
otel=(env OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$oport")
payload="{\"aps\":{\"alert\":\"x\",\"mutable-content\":1},\"image-url\":\"http://127.0.0.1:$port/photo.jpg?token=secret\"}"
# A caller's context: a trace id and its span id, fresh for each door.
traceparent() { printf '00-%s-%s-01' "$(openssl rand -hex 16)" "$(openssl rand -hex 8)"; }
trace_of() { echo "$1" | cut -d- -f2; }
span_of() { echo "$1" | cut -d- -f3; }
# Waits until a span of the trace is exported, then checks the tree.
tree() {  # door traceparent
  for _ in $(seq 200); do grep -q "\"trace\": \"$(trace_of "$2")\".*attache.enrich" "$tmp/spans.jsonl" && break; sleep 0.1; done
  sleep 0.3  # the rest of the batch
  "$python" Tests/cli/otlp.py tree "$tmp/spans.jsonl" "$(trace_of "$2")" "$(span_of "$2")" "$1" > "$tmp/tree-$1.out" 2>&1
}

# The service.
sport=$(free_port)
"${otel[@]}" "$bin" serve --port "$sport" --allow-address 127.0.0.1/32 --media-dir "$tmp/media" --log-format json \
  > "$tmp/serve.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$sport/healthz" && break; sleep 0.1; done
tp=$(traceparent)
unmatched_tp=$(traceparent)
curl -s -o /dev/null -H "traceparent: $unmatched_tp" "http://127.0.0.1:$sport/nothere"
curl -s -o /dev/null -H "traceparent: $tp" --data-binary "$payload" "http://127.0.0.1:$sport/v1/enrich"
tree service "$tp"
check "the service: the payload's span tree under the caller's ($(cat "$tmp/tree-service.out"))" "[ \$? = 0 ] && grep -q '^service:' $tmp/tree-service.out"
# A request no route matches (exported in the same batch): OpenTelemetry's HTTP conventions name
# its span by the method alone, with no http.route.
unmatched=$("$python" -c 'import json, sys
for line in open(sys.argv[1]):
    s = json.loads(line)
    if s["trace"] == sys.argv[2]:
        print(s["name"], s["attributes"].get("http.response.status_code"), s["attributes"].get("http.route"))' \
  "$tmp/spans.jsonl" "$(trace_of "$unmatched_tp")")
check "… a request no route matches: a span named by its method alone, 404, no route (got '$unmatched')" "[ '$unmatched' = 'GET 404 None' ]"
# A failed attachment is logged with the request's trace id.
curl -s -o /dev/null -H "traceparent: $tp" --data-binary '{"aps":{"alert":"x","mutable-content":1},"image-url":"http://127.0.0.1:'"$port"'/missing.jpg"}' \
  "http://127.0.0.1:$sport/v1/enrich"
for _ in $(seq 30); do grep -q "missing.jpg" "$tmp/serve.log" && break; sleep 0.1; done
check "… and a failed attachment's log line carries the trace id" "grep 'missing.jpg' $tmp/serve.log | grep -q '$(trace_of "$tp")'"
# The exporter keeps its connection to the collector between batches: a collector restarted
# meanwhile has closed it, and the next batch (a payload whose media is not cached: its tree has
# every stage) goes on a new one.
tree service "$tp"  # the batch with the failed attachment's payload, on the kept connection
kill "$receiver"; wait "$receiver" 2>/dev/null
receive
tp=$(traceparent)
curl -s -o /dev/null -H "traceparent: $tp" --data-binary "${payload/token=secret/token=secret&v=2}" "http://127.0.0.1:$sport/v1/enrich"
tree service "$tp"
check "… and a collector restarted between batches gets the next ($(cat "$tmp/tree-service.out"))" "grep -q '^service:' $tmp/tree-service.out"

# To an https collector whose certificate the test CA signed (OTEL_EXPORTER_OTLP_CERTIFICATE), two
# batches, the second on the connection the first left open.
bash Tests/cli/test-ca.sh "$tmp"
tlsport=$(free_port)
"$python" Tests/cli/otlp.py serve "$tlsport" "$tmp/spans.jsonl" "$tmp/server.pem" "$tmp/server.key" > "$tmp/otlp-tls.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q listening "$tmp/otlp-tls.log" 2>/dev/null && break; sleep 0.05; done
tport=$(free_port)
env OTEL_EXPORTER_OTLP_ENDPOINT="https://localhost:$tlsport" OTEL_EXPORTER_OTLP_CERTIFICATE="$tmp/ca.pem" OTEL_BSP_SCHEDULE_DELAY=200 \
  "$bin" serve --port "$tport" --allow-address 127.0.0.1/32 --media-dir "$tmp/media-tls" > "$tmp/serve-tls.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$tport/healthz" && break; sleep 0.1; done
for v in 3 4; do
  tp=$(traceparent)
  curl -s -o /dev/null -H "traceparent: $tp" --data-binary "${payload/token=secret/token=secret&v=$v}" "http://127.0.0.1:$tport/v1/enrich"
  tree service "$tp"
  check "over https, batch $v: the payload's span tree ($(cat "$tmp/tree-service.out"))" "grep -q '^service:' $tmp/tree-service.out"
done

# The relay, in front of a double of Apple's API.
uport=$(free_port) rport=$(free_port)
"$python" Tests/cli/providers.py upstream "$uport" "$tmp/upstream.jsonl" > "$tmp/upstream.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q listening "$tmp/upstream.log" 2>/dev/null && break; sleep 0.05; done
"${otel[@]}" "$bin" relay --port "$rport" --apns-upstream "http://127.0.0.1:$uport" --allow-address 127.0.0.1/32 \
  --media-dir "$tmp/relay-media" > "$tmp/relay.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q listening "$tmp/relay.log" 2>/dev/null && break; sleep 0.05; done
tp=$(traceparent)
code=$(curl -s -o /dev/null -w '%{http_code}' --http2-prior-knowledge -H "traceparent: $tp" -H 'apns-topic: com.example.app' \
  -H 'authorization: bearer eyJhbGciOiJFUzI1NiJ9.e30.c2ln' --data-binary "$payload" "http://127.0.0.1:$rport/3/device/abc")
tree relay "$tp"
check "the relay (answered $code): the payload's span tree under the client's ($(cat "$tmp/tree-relay.out"))" "[ $code = 200 ] && grep -q '^relay:' $tmp/tree-relay.out"
check "… and the traceparent went on upstream as it came" "grep -q '$tp' $tmp/upstream.jsonl"
# aioapns, a real APNs client as its users configure it for Apple (TLS, its provider token, no
# trace context of its own), through a traced relay: sent, and the payload's tree starts a trace.
tlsrport=$(free_port)
"${otel[@]}" "$bin" relay --port "$tlsrport" --tls-certificate "$tmp/server.pem" --tls-key "$tmp/server.key" \
  --apns-upstream "http://127.0.0.1:$uport" --allow-address 127.0.0.1/32 --media-dir "$tmp/relay-media" > "$tmp/relay-tls.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q listening "$tmp/relay-tls.log" 2>/dev/null && break; sleep 0.05; done
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$tmp/AuthKey.p8" 2> /dev/null
sent=$("$python" Tests/cli/providers.py send "$tlsrport" "$tmp/ca.pem" "$tmp/AuthKey.p8" "${payload/token=secret/token=secret&v=aioapns}" 2>&1 | tail -1)
for _ in $(seq 200); do grep -q '"parent": "".*"attache.door": "relay"' "$tmp/spans.jsonl" && break; sleep 0.1; done
sleep 0.3
"$python" Tests/cli/otlp.py tree "$tmp/spans.jsonl" - - relay > "$tmp/tree-aioapns.out" 2>&1
check "aioapns through the traced TLS relay: $sent, and the payload's span tree starts a trace ($(cat "$tmp/tree-aioapns.out"))" \
  "[ '$sent' = 'sent 200' ] && grep -q '^relay:' $tmp/tree-aioapns.out"

# The worker, the publisher's context in the message's headers.
start_nats "$tmp" || { echo "FAIL: no nats-server"; exit 1; }
pids+=("$nats_pid")
"${otel[@]}" "$bin" worker --nats "$nats" --allow-address 127.0.0.1/32 --media-dir "$tmp/worker-media" > "$tmp/worker.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q "worker consuming" "$tmp/worker.log" && break; sleep 0.1; done  # its streams made
tp=$(traceparent)
"$python" - "$nats" "$tp" "$payload" > "$tmp/worker.out" 2>&1 <<'PY'
import asyncio, json, os, sys
import nats
sys.path.insert(0, "Samples/queue")
from pipeline import ensure_input_stream, outputs_of

async def main(url, traceparent, payload):
    nc = await nats.connect(url)
    js = nc.jetstream()
    await ensure_input_stream(js)
    await js.publish("attache.in", payload.encode(), headers={"Nats-Msg-Id": "traced-1", "traceparent": traceparent})
    print(json.dumps((await outputs_of(js, "traced-", 1)).get("traced-1", {})))
    await nc.close()

asyncio.run(main(*sys.argv[1:]))
PY
tree worker "$tp"
check "the worker: the payload's span tree under the publisher's ($(cat "$tmp/tree-worker.out"))" "grep -q '^worker:' $tmp/tree-worker.out"
check "… and its output message carries the publisher's traceparent on" "grep -q '\"traceparent\": \"$tp\"' $tmp/worker.out"

# Off unless asked: a service with no OTEL_* variable exports nothing.
before=$(wc -l < "$tmp/spans.jsonl")
qport=$(free_port)
"$bin" serve --port "$qport" --allow-address 127.0.0.1/32 --media-dir "$tmp/media-quiet" > "$tmp/quiet.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$qport/healthz" && break; sleep 0.1; done
tp=$(traceparent)
code=$(curl -s -o /dev/null -w '%{http_code}' -H "traceparent: $tp" --data-binary "$payload" "http://127.0.0.1:$qport/v1/enrich")
sleep 6  # past the 5 s a tracing process would take to send it
check "with no OTEL_* variable nothing is exported (answered $code)" "[ $code = 200 ] && ! grep -q '$(trace_of "$tp")' $tmp/spans.jsonl"
[ "$failed" = 0 ] || { echo "spans: $(wc -l < "$tmp/spans.jsonl") (before the quiet service: $before)"; cat "$tmp"/tree-*.out; }
finish traces
