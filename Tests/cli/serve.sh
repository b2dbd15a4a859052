#!/usr/bin/env bash
# `attache serve` as a process: SIGTERM while 50 slow requests are in flight answers all 50, then
# the process exits 0. Traffic stays on 127.0.0.1.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
cleanup() { kill "$origin" "$server" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

start_origin
sport=$(free_port)
"$bin" serve --port "$sport" --allow-address 127.0.0.1/32 --media-dir "$tmp/media" --cache-ttl 0 > "$tmp/serve.log" 2>&1 &
server=$!
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$sport/healthz" && break; sleep 0.1; done

# A chunked body over 64 KiB is refused while it is read.
head -c 70000 /dev/zero | tr '\0' 'x' | sed 's/^/{"pad":"/; s/$/"}/' > "$tmp/big.json"
code=$(curl -s -o /dev/null -w "%{http_code}" -H "Transfer-Encoding: chunked" --data-binary @"$tmp/big.json" "http://127.0.0.1:$sport/v1/enrich")
check "a chunked body over 64 KiB is 413 (got $code)" "[ $code -eq 413 ]"

# Each request's media takes 2 s to arrive (16 connections to the origin, so up to 8 s in all); the
# deadline is 15 s. SIGTERM comes once the service counts all 50 in flight (read off /metrics, not
# guessed with a sleep that a busy machine may not honour), and all 50 still finish.
for i in $(seq 50); do
  body="{\"aps\":{\"alert\":\"n$i\",\"mutable-content\":1},\"image-url\":\"http://127.0.0.1:$port/photo.jpg?delay=2000&n=$i\"}"
  curl -s -o "$tmp/out.$i" -w "%{http_code}\n" -H "Attache-Deadline-Ms: 15000" --data-binary "$body" \
    "http://127.0.0.1:$sport/v1/enrich" > "$tmp/code.$i" &
done
for _ in $(seq 200); do
  curl -s "http://127.0.0.1:$sport/metrics" | grep '^attache_in_flight 50' >/dev/null && break
  sleep 0.05
done
check "all 50 were in flight at SIGTERM" "curl -s http://127.0.0.1:$sport/metrics | grep '^attache_in_flight 50' >/dev/null"
kill -TERM "$server"
wait "$server"
code=$?
wait $(jobs -p | grep -v "^$origin$") 2>/dev/null
ok=$(cat "$tmp"/code.* 2>/dev/null | grep -c '^200$')
enriched=$(grep -l '"attachments"' "$tmp"/out.* 2>/dev/null | wc -l)
check "serve exits 0 after SIGTERM (got $code)" "[ $code -eq 0 ]"
check "all 50 in-flight requests answered 200 (got $ok)" "[ $ok -eq 50 ]"
check "and enriched, not cut short (got $enriched)" "[ $enriched -eq 50 ]"
check "no new connections after shutdown" "! curl -s -o /dev/null --max-time 1 http://127.0.0.1:$sport/healthz"
# One store, two settings: what the first service (no base URL: file:// URLs) recorded is never
# answered by a second one started with a public base URL; every URL it names is under that base.
sed "s/127.0.0.1:8765/127.0.0.1:$port/" Samples/payloads/fcm.json > "$tmp/fcm.json"
for base in "" https://cdn.example.com/media; do
  bport=$(free_port)
  "$bin" serve --port "$bport" --allow-address 127.0.0.1/32 --media-dir "$tmp/shared-media" \
    ${base:+--public-base-url "$base"} > "$tmp/base${base:+-cdn}.log" 2>&1 &
  bserver=$!
  for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$bport/healthz" && break; sleep 0.1; done
  curl -s --data-binary @"$tmp/fcm.json" "http://127.0.0.1:$bport/v1/enrich" > "$tmp/base${base:+-cdn}.json"
  kill -TERM "$bserver"; wait "$bserver"
done
check "without a base URL: file:// URLs, and the start says so once" \
  "grep -q 'file://' $tmp/base.json && [ \$(grep -c 'no --public-base-url' $tmp/base.log) -eq 1 ]"
urls=$(grep -o '"[a-z]*://[^"]*"' "$tmp/base-cdn.json" | sort -u | tr '\n' ' ')
check "restarted with a base URL over the same store: every URL under it ($urls)" \
  "[ -n \"$urls\" ] && ! echo '$urls' | tr ' ' '\n' | grep -v '^\"https://cdn.example.com/media/' | grep -q ."
check "… and the start does not warn" "! grep -q 'no --public-base-url' $tmp/base-cdn.log"

# attache config: what the service would run with, from the service's own reading, secrets hidden.
config=$(ATTACHE_TOKENS=s3cret-token ATTACHE_DEADLINE=2s "$bin" config serve --port 9123 2>&1)
check "config: a flag's value and source" "echo \"\$config\" | grep -E -q '^ATTACHE_PORT +9123 +flag\$'"
check "config: a variable's value and source" "echo \"\$config\" | grep -E -q '^ATTACHE_DEADLINE +2s +environment\$'"
check "config: a default" "echo \"\$config\" | grep -E -q '^ATTACHE_MAX_IN_FLIGHT +256 +default\$'"
check "config: a token is redacted" "echo \"\$config\" | grep -E -q '^ATTACHE_TOKENS +<redacted> +environment\$' && ! echo \"\$config\" | grep -q s3cret"
check "config: every service setting the docs list is shown" \
  "[ \$(echo \"\$config\" | grep -c '^ATTACHE_') -ge 30 ]"
ATTACHE_PORT=lots "$bin" config serve > "$tmp/config.out" 2>&1
code=$?
check "config: a bad value is the service's own error (exit $code)" "[ $code -ne 0 ] && grep -q 'ATTACHE_PORT=\"lots\" is not a whole number' $tmp/config.out"
# A configuration file under the environment: the service listens where its file says, a
# variable wins over the file, and a misspelt name stops the start naming its line.
fport=$(free_port)
printf '# the service\nATTACHE_PORT=%s\nexport ATTACHE_MAX_IN_FLIGHT=7\nATTACHE_NATS_URL=nats://127.0.0.1:4999\n' "$fport" > "$tmp/attache.env"
config=$(ATTACHE_MAX_IN_FLIGHT=9 "$bin" config serve --config-file "$tmp/attache.env" 2>&1)
check "config file: a value from the file" "echo \"\$config\" | grep -E -q '^ATTACHE_PORT +$fport +file\$'"
check "config file: the environment wins over the file" "echo \"\$config\" | grep -E -q '^ATTACHE_MAX_IN_FLIGHT +9 +environment\$'"
ATTACHE_CONFIG_FILE="$tmp/attache.env" "$bin" serve > "$tmp/fserve.log" 2>&1 &
fserver=$!
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$fport/healthz" && break; sleep 0.05; done
check "config file: the service listens on the file's port" "curl -s http://127.0.0.1:$fport/healthz | grep -q ok"
kill -TERM "$fserver"; wait "$fserver"
printf 'ATTACHE_MAX_INFLIGHT=7\n' > "$tmp/typo.env"
"$bin" serve --config-file "$tmp/typo.env" > "$tmp/typo.out" 2>&1
code=$?
check "config file: a misspelt name stops the start, naming it and its line (exit $code)" \
  "[ $code -ne 0 ] && grep -q 'ATTACHE_MAX_INFLIGHT (line 1)' $tmp/typo.out"
worker_config=$("$bin" config worker --nats nats://127.0.0.1:4999 2>&1)
check "config worker: the NATS URL from its flag" "echo \"\$worker_config\" | grep -E -q '^ATTACHE_NATS_URL +nats://127.0.0.1:4999 +flag\$'"
# A port in use stops the start with one line that names it, and nothing said to be listening.
busy=$(free_port)
python3 -c 'import socket, sys, time; s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); time.sleep(20)' "$busy" &
holder=$!
for _ in $(seq 50); do python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])))' "$busy" 2>/dev/null && break; sleep 0.1; done
for door in serve relay; do
  "$bin" "$door" --port "$busy" --media-dir "$tmp/media" > "$tmp/busy.out" 2>&1
  code=$?
  check "$door on a port in use: exit 1, the port named ($(tail -1 "$tmp/busy.out"))" \
    "[ $code = 1 ] && grep -q '^attache $door: cannot listen on 127.0.0.1:$busy: Address already in use' $tmp/busy.out"
  check "… and no line says it listens or starts" "! grep -v '^attache $door: cannot listen' $tmp/busy.out | grep -q -i 'listening\|starting'"
done
kill "$holder" 2>/dev/null
# --idle-timeout: a keep-alive connection with nothing in flight is closed after it, and kept
# while the client wants it with 0 (for serve as for relay).
idle_check() {  # port: "kept" or "closed" after 2.5 s with nothing in flight, the first answer read
  python3 - "$1" <<'PY'
import socket, sys, time
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
ask = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
c.sendall(ask)
assert c.recv(4096).startswith(b"HTTP/1.1 200")
time.sleep(2.5)
try:
    c.sendall(ask)
    print("kept" if c.recv(4096).startswith(b"HTTP/1.1 200") else "closed")
except OSError:
    print("closed")
PY
}
for idle in 0 1s; do
  iport=$(free_port)
  "$bin" serve --port "$iport" --idle-timeout "$idle" --media-dir "$tmp/media" > "$tmp/idle.log" 2>&1 &
  iserver=$!
  for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$iport/healthz" && break; sleep 0.1; done
  got=$(idle_check "$iport")
  want=$([ "$idle" = 0 ] && echo kept || echo closed)
  check "serve --idle-timeout $idle: an idle keep-alive connection is $want after 2.5 s (got $got)" "[ '$got' = $want ]"
  kill -TERM "$iserver"; wait "$iserver"
done
# A client that asks for a large attachment and stops reading: once the socket takes nothing
# more for --body-timeout (1 s here), the connection is closed, not held (with its task) for as
# long as the client keeps it. The client reads after 4 s and must find the file cut short.
mkdir -p "$tmp/stall-media"
big="$(printf '%064d' 7).mp4"
head -c 64000000 /dev/zero > "$tmp/stall-media/$big"
wport=$(free_port)
"$bin" serve --port "$wport" --body-timeout 1s --media-dir "$tmp/stall-media" > "$tmp/stall.log" 2>&1 &
wserver=$!
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$wport/healthz" && break; sleep 0.1; done
got=$(python3 - "$wport" "$big" <<'PY'
import socket, sys, time
c = socket.socket()
c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
c.connect(("127.0.0.1", int(sys.argv[1])))
c.sendall(b"GET /media/%s HTTP/1.1\r\nHost: a\r\n\r\n" % sys.argv[2].encode())
time.sleep(4)
c.settimeout(10)
total = 0
try:
    while data := c.recv(1 << 20):
        total += len(data)
except OSError:
    pass
print(total)
PY
)
check "serve: a client that stops reading a 64 MB attachment is closed at the body timeout (it got $got bytes)" \
  "[ '$got' -gt 0 ] && [ '$got' -lt 64000000 ]"
kill -TERM "$wserver"; wait "$wserver"
finish serve
