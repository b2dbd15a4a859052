#!/usr/bin/env bash
# `attache relay` as a process, with the curl command line as the provider's client and nghttpd
# (nghttp2's C HTTP/2 server, `make test-deps`) as the upstream, echoing what reached it:
# - TLS with a certificate from a CA made here: ALPN h2 and http/1.1; a client that does not trust
#   the CA is refused and nothing is forwarded;
# - a body without mutable-content reaches the upstream byte for byte; one with it, enriched;
# - the client's headers reach the upstream, the relay's own Attache-Deadline-Ms does not;
# - an upstream that is down is a 503 {"reason":"ServiceUnavailable"}; clear-text HTTP/2 with prior
#   knowledge; SIGTERM exits 0;
# - aioapns, a real APNs client, through the relay to an APNs double (Tests/cli/apns.py); and a
#   relay killed mid-stream loses no notification its client was told was sent.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
command -v nghttpd nghttp > /dev/null || { echo "FAIL: no nghttpd or nghttp: run make test-deps"; exit 1; }

# The CA and the relay's certificate.
Tests/cli/test-ca.sh "$tmp"

start_origin
pids+=("$origin")
# The upstream: POST /3/device/<token> answered 200 with the body it received.
mkdir -p "$tmp/up/3/device" && : > "$tmp/up/3/device/abc"
uport=$(free_port)
nghttpd --no-tls --echo-upload -d "$tmp/up" "$uport" > "$tmp/nghttpd.log" 2>&1 &
pids+=($!)

start_relay() {  # log name, options... → $rport, $relay
  local name=$1
  shift
  rport=$(free_port)
  "$bin" relay --port "$rport" --allow-address 127.0.0.1/32 --public-base-url https://cdn.example.com/m "$@" \
    > "$tmp/$name.log" 2>&1 &
  relay=$!
  pids+=("$relay")
  for _ in $(seq 100); do grep -q 'listening' "$tmp/$name.log" 2>/dev/null && break; sleep 0.05; done
}

start_relay tls --tls-certificate "$tmp/server.pem" --tls-key "$tmp/server.key" --apns-upstream "http://127.0.0.1:$uport"
url="https://127.0.0.1:$rport/3/device/abc"
plain='{"aps":{"alert":"plain"},"n":1.50}'
apns=(-H "authorization: bearer eyJhbGciOiJFUzI1NiJ9.e30.c2ln" -H "apns-topic: com.example.app" -H "apns-push-type: alert")

curl -s --cacert "$tmp/ca.pem" --http2 -D "$tmp/h1" -o "$tmp/b1" -w '%{http_version}' "${apns[@]}" \
  -H "Attache-Deadline-Ms: 1500" --data-binary "$plain" "$url" > "$tmp/v1"
check "TLS with the test CA, HTTP/2 by ALPN (got $(cat "$tmp/v1"))" "[ \"\$(cat $tmp/v1)\" = 2 ] && grep -q '^HTTP/2 200' $tmp/h1"
check "no mutable-content: byte for byte to the upstream" "[ \"\$(cat $tmp/b1)\" = '$plain' ]"
check "… and the outcome said to the client" "grep -qi '^attache-outcome: passthrough; reason=not-mutable' $tmp/h1"
check "… and the budget the header asked for" "grep -qi '^attache-deadline-ms: 1500' $tmp/h1"

curl -s --cacert "$tmp/ca.pem" --http1.1 -o /dev/null -w '%{http_code} %{http_version}' --data-binary "$plain" "$url" > "$tmp/v2"
check "ALPN http/1.1 too (got $(cat "$tmp/v2"))" "[ \"\$(cat $tmp/v2)\" = '200 1.1' ]"

curl -s -o /dev/null --data-binary "$plain" "$url"
code=$?
check "a client that does not trust the CA is refused (curl exit $code)" "[ $code = 60 ]"

media="{\"aps\":{\"alert\":\"sale\",\"mutable-content\":1},\"image-url\":\"http://127.0.0.1:$port/photo.jpg\"}"
curl -s --cacert "$tmp/ca.pem" -D "$tmp/h3" -o "$tmp/b3" --data-binary "$media" "$url"
check "mutable-content: the upstream got the enriched payload" \
  "grep -q '\"attachments\":\\[{\"id\":' $tmp/b3 && grep -q 'https://cdn.example.com/m/' $tmp/b3"
check "… and the client the outcome" "grep -qi '^attache-outcome: enriched' $tmp/h3"

# aioapns, a real APNs client library, through the relay to an APNs double (its own h2 server):
# the double gets the enriched payload with aioapns' provider token, aioapns gets Apple's 200.
python=${ATTACHE_PYTHON:-.build/tools/bin/python}
if "$python" -c 'import aioapns' 2>/dev/null; then
  aport=$(free_port)
  "$python" Tests/cli/apns.py upstream "$aport" "$tmp/apns.jsonl" > "$tmp/apns-double.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do grep -q listening "$tmp/apns-double.log" 2>/dev/null && break; sleep 0.05; done
  kill -TERM "$relay"; wait "$relay"
  start_relay tls2 --tls-certificate "$tmp/server.pem" --tls-key "$tmp/server.key" --apns-upstream "http://127.0.0.1:$aport"
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$tmp/AuthKey.p8" 2> /dev/null
  sent=$("$python" Tests/cli/apns.py send "$rport" "$tmp/ca.pem" "$tmp/AuthKey.p8" "$media" 2>&1 | tail -1)
  check "aioapns through the relay: sent (got '$sent')" "[ '$sent' = 'sent 200' ]"
  check "… the double got the enriched payload with aioapns' token and topic" \
    "grep -q 'https://cdn.example.com/m/' $tmp/apns.jsonl && grep -q '\"authorization\": \"bearer ey' $tmp/apns.jsonl && grep -q '\"apns-topic\": \"com.example.app\"' $tmp/apns.jsonl"

  # Killed mid-stream: aioapns sends 300 notifications through the relay, one every 10 ms, to a
  # double that takes 0.2 s to answer; the relay is killed (SIGKILL) once the double has 10. Every notification
  # aioapns was told was sent must be one the double received; the rest are aioapns' to retry.
  kport=$(free_port)
  "$python" Tests/cli/apns.py upstream "$kport" "$tmp/killed.jsonl" 0.2 > "$tmp/apns-slow.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do grep -q listening "$tmp/apns-slow.log" 2>/dev/null && break; sleep 0.05; done
  kill -TERM "$relay"; wait "$relay"
  start_relay tls3 --tls-certificate "$tmp/server.pem" --tls-key "$tmp/server.key" --apns-upstream "http://127.0.0.1:$kport"
  "$python" Tests/cli/apns.py burst "$rport" "$tmp/ca.pem" "$tmp/AuthKey.p8" "$plain" 300 0.01 "$tmp/burst.txt" > "$tmp/burst.log" 2>&1 &
  burst=$!
  # Killed once the double has answered a few, while the rest are in flight or still to come.
  for _ in $(seq 200); do [ "$(cat "$tmp/killed.jsonl" 2>/dev/null | wc -l)" -ge 10 ] && break; sleep 0.05; done
  kill -KILL "$relay"; wait "$relay" 2>/dev/null
  wait "$burst"
  sent=$(grep -c ' sent$' "$tmp/burst.txt")
  failed_=$(grep -c ' failed$' "$tmp/burst.txt")
  lost=0
  for id in $(awk '$2 == "sent" {print $1}' "$tmp/burst.txt"); do
    grep -q "\"apns-id\": \"$id\"" "$tmp/killed.jsonl" || lost=$((lost + 1))
  done
  check "relay killed mid-stream: $sent told sent, $failed_ not; all 300 answered" "[ $((sent + failed_)) = 300 ]"
  check "… the kill fell mid-stream (some sent, some not)" "[ $sent -gt 0 ] && [ $failed_ -gt 0 ]"
  check "… every notification told sent reached the upstream ($lost did not)" "[ $lost = 0 ]"
  start_relay tls4 --tls-certificate "$tmp/server.pem" --tls-key "$tmp/server.key" --apns-upstream "http://127.0.0.1:$aport"
else
  echo "FAIL: no aioapns in $python: run make test-deps"
  failed=$((failed + 1))
fi

kill -TERM "$relay"; wait "$relay"; code=$?
check "SIGTERM: the relay exits 0 (got $code)" "[ $code = 0 ]"

# What the client receives frame by frame: a 200 without a body is one HEADERS frame with
# END_STREAM, an error's JSON one DATA frame with END_STREAM, as Apple sends them (aioapns reads
# every DATA frame as JSON, and drops its connection on an empty one).
start_relay frames --apns-upstream "http://127.0.0.1:$uport"
nghttp -v -d /dev/null "http://127.0.0.1:$rport/3/device/abc" > "$tmp/frames-200" 2>&1
nghttp -v -d /dev/null "http://127.0.0.1:$rport/3/elsewhere" > "$tmp/frames-404" 2>&1
check "an empty 200 is one HEADERS frame that ends the stream" \
  "grep -q 'recv HEADERS frame .*flags=0x05' $tmp/frames-200 && ! grep -q 'recv DATA frame' $tmp/frames-200"
check "an error's JSON is one DATA frame that ends the stream" \
  "[ \$(grep -c 'recv DATA frame' $tmp/frames-404) = 1 ] && grep -q 'recv DATA frame <length=20, flags=0x01' $tmp/frames-404"
kill -TERM "$relay"; wait "$relay"

# Clear text with prior knowledge (a sidecar on loopback), and an upstream that is down.
start_relay clear --apns-upstream "http://127.0.0.1:$(free_port)"
code=$(curl -s --http2-prior-knowledge -o "$tmp/b4" -w '%{http_code}' --data-binary "$plain" "http://127.0.0.1:$rport/3/device/abc")
check "clear-text HTTP/2; an upstream that is down is 503 (got $code)" "[ $code = 503 ]"
check "… with Apple's reason" "[ \"\$(cat $tmp/b4)\" = '{\"reason\":\"ServiceUnavailable\"}' ]"
kill -TERM "$relay"; wait "$relay"

if [ "$failed" -gt 0 ]; then
  for log in "$tmp"/*.log; do echo "--- $log"; tail -n 20 "$log"; done
fi
finish relay
