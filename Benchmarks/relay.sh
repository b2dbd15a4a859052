#!/usr/bin/env bash
# One hop's price, in one run: h2load sending the same stream of APNs notifications
# (POST /3/device/<token>, 8 connections, 32 streams each) to an upstream directly, through
# `attache relay`, and through nghttpx (nghttp2's C HTTP/2 reverse proxy, with as many workers as
# the relay has event loops, one per core) in front of the same upstream. The upstream is nghttpd
# over TLS with a test CA, answering 200 from a file; its direct rate shows it is not the
# bottleneck. Passthrough (no mutable-content) through both, then enriched with the media already
# cached (the relay only). What a hop adds to a request's time is measured one request at a time
# (h2load -c 1 -m 1, where the mean is the median's neighbour); at 256 streams in flight the time is
# mostly queueing, so there the rate is what counts. Goals: passthrough adds at most 1 ms and keeps
# at least 0.8x nghttpx's rate; cached enrichment at least 5,000 notifications/s.
#   usage: Benchmarks/relay.sh [ATTACHE_BINARY]   (N=40000 requests per measure)
set -euo pipefail
cd "$(dirname "$0")/.."
. Benchmarks/lib.sh
bin=${1:-.build/release/attache}
n=$(setting N 40000 10000)
work=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT

for p in nghttp2-client nghttp2-proxy nghttp2-server openssl; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="${missing:-} $p"
done
if [ -n "${missing:-}" ]; then
  sudo_=$([ "$(id -u)" = 0 ] || echo sudo)
  $sudo_ apt-get update -qq && $sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing
fi

Tests/cli/test-ca.sh "$work"
mkdir -p "$work/up/3/device" && : > "$work/up/3/device/abc"
up=$(free_port)
nghttpd -n 1 -d "$work/up" "$up" "$work/server.key" "$work/server.pem" > "$work/nghttpd.log" 2>&1 &
pids+=($!)
start_origin Samples/media "$work/origin.log"
pids+=("$origin")

relay_port=$(free_port)
"$bin" relay --port "$relay_port" --apns-upstream "https://127.0.0.1:$up" --upstream-ca "$work/ca.pem" \
  --allow-address 127.0.0.1/32 --media-dir "$work/media" --public-base-url https://cdn.example.com/m > "$work/relay.log" 2>&1 &
pids+=($!)
proxy_port=$(free_port)
nghttpx "--frontend=127.0.0.1,$proxy_port;no-tls" "--backend=127.0.0.1,$up;;proto=h2;tls;sni=localhost" --cacert="$work/ca.pem" \
  --workers="$(nproc)" --errorlog-file="$work/nghttpx.log" --conf=/dev/null > /dev/null 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q listening "$work/relay.log" 2>/dev/null && break; sleep 0.05; done
sleep 0.5

printf '{"aps":{"alert":"plain"},"campaign":42}' > "$work/plain.json"
printf '{"aps":{"alert":"sale","mutable-content":1},"image-url":"http://127.0.0.1:%s/photo.jpg"}' "$port" > "$work/media.json"
headers=(-H "authorization: bearer eyJhbGciOiJFUzI1NiJ9.e30.c2ln" -H "apns-topic: com.example.app" -H "apns-push-type: alert")

# h2load's summary: req/s, mean time per request (ms), requests that did not succeed; the two
# numbers also to $work/NAME.num for the ratios.
measure() {  # label url body name [h2load's load options]
  local load=("${@:5}")
  [ ${#load[@]} -gt 0 ] || load=(-n "$n" -c 8 -m 32)
  h2load "${load[@]}" "${headers[@]}" -d "$3" "$2" > "$work/h2load.out" 2>&1
  python3 - "$1" "$work/h2load.out" "$work/$4.num" <<'PY'
import re, sys
text = open(sys.argv[2]).read()
rate = float(re.search(r"finished in [\d.]+\w+, ([\d.]+) req/s", text).group(1))
done = re.search(r"requests: (\d+) total, \d+ started, \d+ done, (\d+) succeeded", text)
value, unit = re.search(r"time for request:\s+\S+\s+\S+\s+([\d.]+)(us|ms|s)", text).groups()
mean = float(value) * {"us": 0.001, "ms": 1, "s": 1000}[unit]
print(f"{sys.argv[1]:<48} {rate:10.0f} req/s  mean {mean:7.2f} ms  not 2xx {int(done.group(1)) - int(done.group(2))}")
open(sys.argv[3], "w").write(f"{rate} {mean}")
PY
}

echo "$n notifications, h2load -c 8 -m 32, upstream nghttpd over TLS, $(nproc) cores"
curl -s --http2-prior-knowledge -o /dev/null "${headers[@]}" --data-binary @"$work/media.json" "http://127.0.0.1:$relay_port/3/device/abc"
measure "direct to the upstream (TLS)" "https://127.0.0.1:$up/3/device/abc" "$work/plain.json" direct
measure "through nghttpx, passthrough" "http://127.0.0.1:$proxy_port/3/device/abc" "$work/plain.json" proxy
measure "through attache relay, passthrough" "http://127.0.0.1:$relay_port/3/device/abc" "$work/plain.json" relay
measure "through attache relay, enriched (media cached)" "http://127.0.0.1:$relay_port/3/device/abc" "$work/media.json" enriched
one=(-n 3000 -c 1 -m 1)
measure "one at a time: direct" "https://127.0.0.1:$up/3/device/abc" "$work/plain.json" direct1 "${one[@]}"
measure "one at a time: through nghttpx" "http://127.0.0.1:$proxy_port/3/device/abc" "$work/plain.json" proxy1 "${one[@]}"
measure "one at a time: through attache relay" "http://127.0.0.1:$relay_port/3/device/abc" "$work/plain.json" relay1 "${one[@]}"
python3 - "$work" <<'PY'
import sys
w = sys.argv[1]
read = lambda name: [float(x) for x in open(f"{w}/{name}.num").read().split()]
direct, proxy, relay, enriched, direct1, proxy1, relay1 = (
    read(n) for n in ("direct", "proxy", "relay", "enriched", "direct1", "proxy1", "relay1"))
print(f"relay passthrough / nghttpx rate: {relay[0] / proxy[0]:.2f}x (goal >= 0.8x)")
print(f"one at a time, relay passthrough mean - direct mean: {relay1[1] - direct1[1]:+.2f} ms; "
      f"nghttpx's: {proxy1[1] - direct1[1]:+.2f} ms (goal <= +1 ms)")
print(f"relay enriched, media cached: {enriched[0]:.0f} notifications/s (goal >= 5,000)")
PY
