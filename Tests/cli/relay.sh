#!/usr/bin/env bash
# `attache relay` as a process, with the curl command line as the provider's client and nghttpd
# (nghttp2's C HTTP/2 server, `make test-deps`) as the upstream, echoing what reached it:
# - TLS with a certificate from a CA made here: ALPN h2 and http/1.1; a client that does not trust
#   the CA is refused and nothing is forwarded;
# - a body without mutable-content reaches the upstream byte for byte; one with it, enriched;
# - the client's headers reach the upstream, the relay's own Attache-Deadline-Ms does not;
# - an upstream that is down is a 503 {"reason":"ServiceUnavailable"}; clear-text HTTP/2 with prior
#   knowledge; SIGTERM exits 0; every answer with a body reaches its client, also the one that
#   crosses the upstream connection's window, and an early answer (404, 405, 413) the client
#   that sends its whole body before it reads;
# - aioapns, a real APNs client, through the relay to an APNs double (Tests/cli/providers.py); and a
#   relay killed mid-stream loses no notification its client was told was sent, and one stopped
#   (SIGTERM) answers every request it took on before it closes;
# - hostile clients: a request the client did not finish (closed, reset, headers alone) never
#   reaches the upstream; a connection error (headers past 16 KB) closes its connection; a
#   slowloris client is closed at the header timeout, an HTTP/2 stream whose body stalls is reset
#   at the body timeout, connections past the per-address cap at once; a relay named as its own upstream does not start, two relays forwarding to each other
#   answer 508 at the first repeat.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
command -v nghttpd nghttp h2load > /dev/null || { echo "FAIL: no nghttpd, nghttp or h2load: run make test-deps"; exit 1; }

# The CA and the relay's certificate.
Tests/cli/test-ca.sh "$tmp"

start_origin
pids+=("$origin")
# The upstream: POST /3/device/<token> answered 200 with the body it received.
mkdir -p "$tmp/up/3/device" && : > "$tmp/up/3/device/abc"
uport=$(free_port)
nghttpd --no-tls --echo-upload -d "$tmp/up" "$uport" > "$tmp/nghttpd.log" 2>&1 &
pids+=($!)

start_relay() {  # log name, options... → $rport (the port in $next_port when set), $relay
  local name=$1
  shift
  rport=${next_port:-$(free_port)}
  next_port=
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
curl -s --cacert "$tmp/ca.pem" --no-alpn --http1.1 -o /dev/null -w '%{http_code} %{http_version}' --data-binary "$plain" "$url" > "$tmp/v2n"
check "TLS with no ALPN, HTTP/1.1 told by its first bytes (got $(cat "$tmp/v2n"))" "[ \"\$(cat $tmp/v2n)\" = '200 1.1' ]"

curl -s -o /dev/null --data-binary "$plain" "$url"
code=$?
check "a client that does not trust the CA is refused (curl exit $code)" "[ $code = 60 ]"

media="{\"aps\":{\"alert\":\"sale\",\"mutable-content\":1},\"image-url\":\"http://127.0.0.1:$port/photo.jpg\"}"
curl -s --cacert "$tmp/ca.pem" -D "$tmp/h3" -o "$tmp/b3" --data-binary "$media" "$url"
check "mutable-content: the upstream got the enriched payload" \
  "grep -q '\"attachments\":\\[{\"id\":' $tmp/b3 && grep -q 'https://cdn.example.com/m/' $tmp/b3"
check "… and the client the outcome" "grep -qi '^attache-outcome: enriched' $tmp/h3"
# The same media again is in the cache: answered from the event loop, the same enriched bytes.
curl -s --cacert "$tmp/ca.pem" --http2 -D "$tmp/h3c" -o "$tmp/b3c" --data-binary "$media" "$url"
check "the same media again (cached): the upstream got the same enriched payload, the client the outcome" \
  "cmp -s $tmp/b3 $tmp/b3c && grep -qi '^attache-outcome: enriched' $tmp/h3c"

# aioapns, a real APNs client library, through the relay to an APNs double (its own h2 server):
# the double gets the enriched payload with aioapns' provider token, aioapns gets Apple's 200.
python=${ATTACHE_PYTHON:-.build/tools/bin/python}
if "$python" -c 'import aioapns' 2>/dev/null; then
  aport=$(free_port)
  "$python" Tests/cli/providers.py upstream "$aport" "$tmp/apns.jsonl" > "$tmp/apns-double.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do grep -q listening "$tmp/apns-double.log" 2>/dev/null && break; sleep 0.05; done
  kill -TERM "$relay"; wait "$relay"
  start_relay tls2 --tls-certificate "$tmp/server.pem" --tls-key "$tmp/server.key" --apns-upstream "http://127.0.0.1:$aport"
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$tmp/AuthKey.p8" 2> /dev/null
  sent=$("$python" Tests/cli/providers.py send "$rport" "$tmp/ca.pem" "$tmp/AuthKey.p8" "$media" 2>&1 | tail -1)
  check "aioapns through the relay: sent (got '$sent')" "[ '$sent' = 'sent 200' ]"
  check "… the double got the enriched payload with aioapns' token and topic" \
    "grep -q 'https://cdn.example.com/m/' $tmp/apns.jsonl && grep -q '\"authorization\": \"bearer ey' $tmp/apns.jsonl && grep -q '\"apns-topic\": \"com.example.app\"' $tmp/apns.jsonl"
  # A context as ssl.create_default_context makes it, no ALPN: Apple speaks HTTP/2 to it, and so
  # does the relay, told by the client's first bytes.
  sent=$("$python" Tests/cli/providers.py send "$rport" "$tmp/ca.pem" "$tmp/AuthKey.p8" "$plain" no-alpn 2>&1 | tail -1)
  check "aioapns with no ALPN through the TLS relay: sent (got '$sent')" "[ '$sent' = 'sent 200' ]"

  # Killed mid-stream: aioapns sends 300 notifications through the relay, one every 10 ms, to a
  # double that takes 0.2 s to answer; the relay is killed (SIGKILL) once the double has 10. Every notification
  # aioapns was told was sent must be one the double received; the rest are aioapns' to retry.
  kport=$(free_port)
  "$python" Tests/cli/providers.py upstream "$kport" "$tmp/killed.jsonl" 0.2 > "$tmp/apns-slow.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do grep -q listening "$tmp/apns-slow.log" 2>/dev/null && break; sleep 0.05; done
  kill -TERM "$relay"; wait "$relay"
  start_relay tls3 --tls-certificate "$tmp/server.pem" --tls-key "$tmp/server.key" --apns-upstream "http://127.0.0.1:$kport"
  "$python" Tests/cli/providers.py burst "$rport" "$tmp/ca.pem" "$tmp/AuthKey.p8" "$plain" 300 0.01 "$tmp/burst.txt" > "$tmp/burst.log" 2>&1 &
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
  # Stopped mid-stream (SIGTERM, as a rolling deploy stops a replica): the same burst, the relay
  # told to stop once the double has 10. It answers the requests it took on, then says GOAWAY and
  # closes: every notification the double received is one aioapns was told was sent (aioapns
  # sends again what a connection closed on, and takes a GOAWAY for the close: a GOAWAY before
  # the answers made each request in flight a notification sent twice).
  : > "$tmp/killed.jsonl"
  start_relay tls6 --tls-certificate "$tmp/server.pem" --tls-key "$tmp/server.key" --apns-upstream "http://127.0.0.1:$kport"
  "$python" Tests/cli/providers.py burst "$rport" "$tmp/ca.pem" "$tmp/AuthKey.p8" "$plain" 300 0.01 "$tmp/stopped.txt" > "$tmp/stopped.log" 2>&1 &
  burst=$!
  for _ in $(seq 200); do [ "$(cat "$tmp/killed.jsonl" 2>/dev/null | wc -l)" -ge 10 ] && break; sleep 0.05; done
  kill -TERM "$relay"; wait "$relay"; code=$?
  wait "$burst"
  sent=$(grep -c ' sent$' "$tmp/stopped.txt")
  failed_=$(grep -c ' failed$' "$tmp/stopped.txt")
  received=$(grep -o '"apns-id": "[^"]*"' "$tmp/killed.jsonl" | cut -d'"' -f4 | sort)
  unsent=0
  for id in $received; do grep -q "^$id sent$" "$tmp/stopped.txt" || unsent=$((unsent + 1)); done
  twice=$(echo "$received" | uniq -d | grep -c . || true)
  check "relay stopped mid-stream (SIGTERM): exit $code, $sent told sent, $failed_ not; all 300 answered" \
    "[ $code = 0 ] && [ $((sent + failed_)) = 300 ] && [ $sent -gt 0 ]"
  check "… every notification the upstream received was told sent ($unsent were not, $twice received twice)" \
    "[ $unsent = 0 ] && [ $twice = 0 ] && [ -n '$received' ]"

  # Apple out of reach: every notification of a burst comes back 503 ServiceUnavailable, carrying
  # its apns-id (aioapns reads it from every answer, and without it drops the connection and says
  # MaxAttemptsExceeded instead of a 503 it would retry).
  start_relay tls5 --tls-certificate "$tmp/server.pem" --tls-key "$tmp/server.key" --apns-upstream "http://127.0.0.1:$(free_port)"
  "$python" Tests/cli/providers.py burst "$rport" "$tmp/ca.pem" "$tmp/AuthKey.p8" "$plain" 20 0.01 "$tmp/down.txt" > "$tmp/down.log" 2>&1
  down=$(grep -c ' 503 ServiceUnavailable$' "$tmp/down.log" || true)
  check "upstream down: aioapns got 503 ServiceUnavailable for each of 20 ($down)" "[ $down = 20 ]"
  kill -TERM "$relay"; wait "$relay"
  # Clients that never finish their requests: HEADERS and a whole body without END_STREAM, then
  # the connection closed; half a body, then RST_STREAM; 5 connections of 20 streams with HEADERS
  # alone, then closed; HTTP/1.1 short of its Content-Length. Nothing of them reaches the upstream:
  # a request goes on only after its end. Then one whole request, which does.
  hport=$(free_port)
  "$python" Tests/cli/providers.py upstream "$hport" "$tmp/hostile.jsonl" > "$tmp/apns-hostile.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do grep -q listening "$tmp/apns-hostile.log" 2>/dev/null && break; sleep 0.05; done
  start_relay hostile --apns-upstream "http://127.0.0.1:$hport" --fcm-upstream "http://127.0.0.1:$hport"
  for case in unfinished reset "headers 5 20" http1; do
    # shellcheck disable=SC2086 # the case's words are its arguments
    "$python" Tests/cli/providers.py hostile "$rport" $case >> "$tmp/hostile.log" 2>&1
  done
  curl -s --http2-prior-knowledge -o /dev/null "${apns[@]}" --data-binary "$plain" "http://127.0.0.1:$rport/3/device/whole"
  sleep 0.5
  got=$(cat "$tmp/hostile.jsonl" 2>/dev/null | wc -l)
  check "unfinished, reset and headers-only requests never reach the upstream (it got $got, the whole one alone)" \
    "[ $got = 1 ] && grep -q '/3/device/whole' $tmp/hostile.jsonl"
  : > "$tmp/hostile.jsonl"
  # Requests RFC 9113 calls malformed (header blocks, and bodies that are not their
  # content-length), each on its own stream of one connection: every one is reset (PROTOCOL_ERROR)
  # and none goes upstream; a well-formed request after them on the same connection is sent.
  said=$("$python" Tests/cli/providers.py malformed "$rport" 2>&1 | tail -1)
  sleep 0.3
  check "malformed requests are reset, none is sent, and the connection goes on ($said)" \
    "[ '$said' = 'reset 17 of 17 PROTOCOL_ERROR, then 200' ] && [ \$(wc -l < $tmp/hostile.jsonl) = 1 ]"
  # A header block past 16 KB is a connection error: NIO sends GOAWAY, and the relay closes the
  # connection once the request before it is answered, not when the client leaves.
  said=$("$python" Tests/cli/providers.py oversized "$rport" 2>&1 | tail -1)
  check "a header block past 16 KB: GOAWAY COMPRESSION_ERROR, then the connection closed ($said)" "[ '$said' = 'goaway 9, closed' ]"
  # A client that shuts its side of the connection (SHUT_WR) with a stream's body unfinished:
  # that stream is reset and the connection closed at once, not held until the body timeout
  # (10 s here) and then the idle timeout.
  said=$("$python" Tests/cli/providers.py halfclosed "$rport" 2>&1 | tail -1)
  after=${said##* }
  check "a client that closes its side: its unfinished stream reset, the connection closed ($said)" \
    "[ '${said% after *}' = 'answered 3:200; reset 1:CANCEL; closed' ] && awk 'BEGIN { exit !($after < 2) }'"
  kill -TERM "$relay"; wait "$relay"
  # Slow and numerous clients: an HTTP/1.1 request's headers must be in within --header-timeout
  # (1 s here) however slowly they drip, an HTTP/2 stream's body within --body-timeout (1 s here)
  # of its headers; past --max-connections-per-address (5 here) a client's connections are closed
  # at once; once they are gone, a request goes through.
  start_relay caps --apns-upstream "http://127.0.0.1:$hport" --header-timeout 1s --body-timeout 1s --max-connections-per-address 5
  took=$("$python" Tests/cli/providers.py slowloris "$rport")
  check "slowloris over HTTP/1.1: closed at the header timeout (after ${took}s)" "awk 'BEGIN { exit !($took >= 0.9 && $took < 4) }'"
  closed=$("$python" Tests/cli/providers.py hold "$rport" 12)
  check "12 connections from one address, 5 allowed: 7 closed at once (got $closed)" "[ '$closed' = 7 ]"
  sleep 0.5
  code=$(curl -s --http2-prior-knowledge -o /dev/null -w '%{http_code}' "${apns[@]}" --data-binary "$plain" "http://127.0.0.1:$rport/3/device/whole")
  check "… and once they are gone, a request goes through (got $code)" "[ $code = 200 ]"
  # Stalled HTTP/2 streams (HEADERS alone, half a body; a 404 whose body stops; a 404 whose
  # answer the client gives no window for) are reset at the body timeout: the unanswered CANCEL,
  # the one answered early NO_ERROR, the answer held back CANCEL; none is sent upstream. The
  # whole requests on the same connection, before and after, are answered.
  : > "$tmp/hostile.jsonl"
  said=$("$python" Tests/cli/providers.py stalled "$rport")
  after=${said##* }
  check "stalled HTTP/2 streams reset at the body timeout ($said)" \
    "[ '${said% after *}' = 'answered 5:404 7:200 9:404 11:200; reset 1:CANCEL 3:CANCEL 5:NO_ERROR 9:CANCEL;' ] && awk 'BEGIN { exit !($after >= 0.9 && $after < 2) }'"
  check "… and of them only the two whole requests reached the upstream" "[ \$(wc -l < $tmp/hostile.jsonl) = 2 ]"
  # A SIGTERM while a stream's body stalls: the drain waits for it no longer than the body
  # timeout, then says GOAWAY, closes, and the relay exits.
  "$python" Tests/cli/providers.py held "$rport" > "$tmp/held.txt" 2>&1 &
  held=$!
  for _ in $(seq 100); do grep -q holding "$tmp/held.txt" 2>/dev/null && break; sleep 0.05; done
  start=$(date +%s%N)
  kill -TERM "$relay"; wait "$relay"; code=$?
  took=$(( ($(date +%s%N) - start) / 1000000 ))
  wait "$held"
  said=$(tail -1 "$tmp/held.txt")
  check "SIGTERM with a stalled stream: it is reset at the body timeout, then GOAWAY and the close ($said), exit $code after ${took} ms" \
    "[ '${said% after *}' = 'reset 1:CANCEL, goaway 0; closed' ] && [ $code = 0 ] && [ $took -lt 2000 ]"

  # Rapid reset (streams opened and reset at once, CVE-2023-44487): five rounds of 80
  # connections resetting 150 streams each. Once the relay has worked through them (its count of
  # resets stops moving) and given the memory back, its RSS is within 20 % of what it was before
  # (after one such connection, which brings in the code and buffers HTTP/2 uses); the process
  # stays up and a request still goes through.
  mport=$(free_port)
  start_relay rapid --apns-upstream "http://127.0.0.1:$hport" --metrics-port "$mport"
  rss() { awk '/^VmRSS/ {print $2}' "/proc/$relay/status"; }
  resets() { curl -s "http://127.0.0.1:$mport/metrics" | awk '$1 == "attache_relay_client_resets_total" {print $2}'; }
  settled() {  # until the count of resets has not moved for 4 s (at most 2 minutes), then the trims
    local last=-1 now
    for _ in $(seq 30); do now=$(resets); [ "$now" = "$last" ] && break; last=$now; sleep 4; done
    sleep 5
  }
  "$python" Tests/cli/providers.py hostile "$rport" rapid 1 150
  settled
  before=$(rss)
  for _ in 1 2 3 4 5; do "$python" Tests/cli/providers.py hostile "$rport" rapid 80 150; done
  settled
  after=$(rss)
  check "rapid reset, 5 x 80 connections x 150 streams ($(resets) resets counted): RSS ${before} kB, then ${after} kB (at most +20 %)" \
    "[ $after -le $((before * 12 / 10)) ] && [ \"\$(resets)\" -ge 1000 ]"
  code=$(curl -s --http2-prior-knowledge -o /dev/null -w '%{http_code}' "${apns[@]}" --data-binary "$plain" "http://127.0.0.1:$rport/3/device/whole")
  check "… and a request goes through after them (got $code)" "[ $code = 200 ]"
  kill -TERM "$relay"; wait "$relay"

  start_relay tls4 --tls-certificate "$tmp/server.pem" --tls-key "$tmp/server.key" --apns-upstream "http://127.0.0.1:$aport"
else
  echo "FAIL: no aioapns in $python: run make test-deps"
  failed=$((failed + 1))
fi

# firebase-admin, Google's own FCM client, as docs/relay.md configures it (Samples/relay/fcm_send.py:
# its FCM_URL pointed at the relay, the relay's CA trusted through REQUESTS_CA_BUNDLE and
# SSL_CERT_FILE, a service account key file whose token_uri is an OAuth double): send and
# send_each over HTTP/1.1 (requests), send_each_async over HTTP/2 (httpx); the FCM double gets each
# message enriched with the token firebase-admin bought, and the client each message's name.
if "$python" -c 'import firebase_admin' 2>/dev/null; then
  fport=$(free_port) oport=$(free_port)
  "$python" Tests/cli/providers.py upstream "$fport" "$tmp/fcm.jsonl" > "$tmp/fcm-double.log" 2>&1 &
  pids+=($!)
  "$python" Tests/cli/providers.py oauth "$oport" > "$tmp/oauth.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do grep -q listening "$tmp/fcm-double.log" && grep -q listening "$tmp/oauth.log" && break; sleep 0.05; done 2>/dev/null
  kill -TERM "$relay"; wait "$relay"
  start_relay fcm --tls-certificate "$tmp/server.pem" --tls-key "$tmp/server.key" --fcm-upstream "http://127.0.0.1:$fport"
  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$tmp/account.key" 2> /dev/null
  python3 -c 'import json, sys; print(json.dumps({"type": "service_account", "project_id": "acme-push", "private_key_id": "k1",
    "private_key": open(sys.argv[1]).read(), "client_email": "sender@acme-push.iam.gserviceaccount.com", "client_id": "1",
    "token_uri": "http://127.0.0.1:%s/token" % sys.argv[2]}))' "$tmp/account.key" "$oport" > "$tmp/account.json"
  # With the libraries' own logs, which name the HTTP version each request went out with.
  firebase() {
    REQUESTS_CA_BUNDLE="$tmp/ca.pem" SSL_CERT_FILE="$tmp/ca.pem" "$python" -c 'import logging, runpy, sys
logging.basicConfig(level=logging.DEBUG, format="log: %(name)s %(message)s")
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")' Samples/relay/fcm_send.py "https://127.0.0.1:$rport" "$tmp/account.json" \
      "http://127.0.0.1:$port/photo.jpg" "$1" 2>&1 | grep -v DeprecationWarning
  }
  firebase send > "$tmp/fa-send.out"
  firebase send_each > "$tmp/fa-each.out"
  firebase send_each_async > "$tmp/fa-async.out"
  names() { grep -c '^projects/acme-push/messages/[0-9]*$' "$1"; }
  check "firebase-admin send: FCM's answer reached it ($(grep -v '^log:' "$tmp/fa-send.out" | tail -2))" "[ \$(names $tmp/fa-send.out) = 1 ]"
  check "… over HTTP/1.1" "grep -q 'POST /v1/projects/acme-push/messages:send HTTP/1.1\" 200' $tmp/fa-send.out"
  check "firebase-admin send_each: three names ($(grep -v '^log:' "$tmp/fa-each.out" | tail -2))" "[ \$(names $tmp/fa-each.out) = 3 ]"
  check "firebase-admin send_each_async: three names over HTTP/2 ($(grep -v '^log:' "$tmp/fa-async.out" | tail -2))" \
    "[ \$(names $tmp/fa-async.out) = 3 ] && grep -q 'HTTP/2 200' $tmp/fa-async.out"
  enriched=$(python3 -c 'import json, sys
n = 0
for line in open(sys.argv[1]):
    r = json.loads(line); m = json.loads(r["body"])["message"]
    n += (r["fields"].get("authorization", "").startswith("Bearer ya29.double-") and "fid" in m
          and m["notification"]["image"].startswith("https://cdn.example.com/m/")
          and m["apns"]["payload"]["attachments"][0]["url"].startswith("https://cdn.example.com/m/")
          and m["android"]["notification"]["image"].startswith("https://cdn.example.com/m/"))
print(n)' "$tmp/fcm.jsonl" 2>&1)
  check "… the FCM double got 7 messages, each enriched for iOS and Android, with firebase-admin's token (got $enriched)" "[ '$enriched' = 7 ]"
  # Google's own Android image example: no APNs part, no mutable-content, the image set in
  # android.notification; the device downloads whatever URL it gets, so it gets the validated copy.
  firebase android > "$tmp/fa-android.out"
  android=$(python3 -c 'import json, sys
for line in open(sys.argv[1]):
    m = json.loads(json.loads(line)["body"])["message"]
    if m.get("fid") == "android-1":
        print(m["android"]["notification"]["image"], "apns" in m)' "$tmp/fcm.jsonl" 2>&1)
  check "firebase-admin, an Android-only message (Google's image example): its image is the relay's copy ($android)" \
    "[ \$(names $tmp/fa-android.out) = 1 ] && [[ '$android' == https://cdn.example.com/m/*' False' ]]"
else
  echo "FAIL: no firebase-admin in $python: run make test-deps"
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
# Answers with bodies (FCM's always have one), one after another on one upstream connection: the
# relay gives the connection's window back to the upstream every 32 KB of them, as the answer
# that crossed it comes in. That answer too is the client's: 200 echoes of 1 KB, all 200.
printf '{"aps":{"alert":"%s"}}' "$(head -c 1000 /dev/zero | tr '\0' x)" > "$tmp/kb.json"
h2load -n 200 -c 1 -m 1 -d "$tmp/kb.json" "${apns[@]}" "http://127.0.0.1:$rport/3/device/abc" > "$tmp/h2load-echo" 2>&1
check "200 answers of 1 KB on one upstream connection: each the upstream's 200 ($(grep 'status codes' "$tmp/h2load-echo"))" \
  "grep -q 'status codes: 200 2xx, 0 3xx, 0 4xx, 0 5xx' $tmp/h2load-echo"
# A client that sends its whole body before it reads (httpx, firebase-admin's HTTP/2 client), to
# a request the relay answers early: the relay keeps giving back the stream's window and drops the
# rest, so the client finishes sending and reads its answer instead of waiting out its timeout.
early=$("$python" Tests/cli/providers.py early "$rport" 2>&1 | tail -1)
check "httpx sends 70,000 bytes before it reads: a wrong path, method, a body too large answered 404 405 413 (got $early)" \
  "[ '$early' = '404 405 413' ]"
kill -TERM "$relay"; wait "$relay"

# Clear text with prior knowledge (a sidecar on loopback), and an upstream that is down.
start_relay clear --apns-upstream "http://127.0.0.1:$(free_port)"
code=$(curl -s --http2-prior-knowledge -o "$tmp/b4" -w '%{http_code}' --data-binary "$plain" "http://127.0.0.1:$rport/3/device/abc")
check "clear-text HTTP/2; an upstream that is down is 503 (got $code)" "[ $code = 503 ]"
check "… with Apple's reason" "[ \"\$(cat $tmp/b4)\" = '{\"reason\":\"ServiceUnavailable\"}' ]"
kill -TERM "$relay"; wait "$relay"

# Loops: a relay named as its own upstream is refused at start; two relays forwarding to each
# other (a loop through another name) answer 508 LoopDetected at the first repeat, at once, where
# without the via field the request went round until the upstream timeout.
lport=$(free_port)
"$bin" relay --port "$lport" --apns-upstream "http://localhost:$lport" > "$tmp/self.log" 2>&1; code=$?
check "a relay whose upstream is its own listener does not start (exit $code)" \
  "[ $code = 64 ] && grep -q 'own listener' $tmp/self.log"
aport2=$(free_port); bport2=$(free_port)
next_port=$aport2 start_relay loop-a --apns-upstream "http://127.0.0.1:$bport2"
loop_a=$relay
next_port=$bport2 start_relay loop-b --apns-upstream "http://127.0.0.1:$aport2"
code=$(curl -s --http2-prior-knowledge -m 5 -o "$tmp/b5" -w '%{http_code}' "${apns[@]}" --data-binary "$plain" \
  "http://127.0.0.1:$aport2/3/device/abc")
check "two relays forwarding to each other: 508 LoopDetected at the first repeat (got $code $(cat "$tmp/b5"))" \
  "[ $code = 508 ] && [ \"\$(cat $tmp/b5)\" = '{\"reason\":\"LoopDetected\"}' ]"
kill -TERM "$relay" "$loop_a"; wait "$relay" "$loop_a"

if [ "$failed" -gt 0 ]; then
  for log in "$tmp"/*.log; do echo "--- $log"; tail -n 20 "$log"; done
fi
finish relay
