#!/usr/bin/env bash
# Load on `attache serve` with wrk, on loopback, in one run: passthrough payloads, enrich with the
# media already cached, enrich with fresh downloads (every request a new URL) of a 9 MP JPEG from
# a loopback origin, with 64 connections. Prints req/s, latency percentiles, non-200 answers and
# the service's peak RSS. Targets (issue 5): ≥ 10,000 req/s passthrough; ≥ 5,000 req/s cached
# with p99 ≤ 5 ms; no non-200; < 300 MB peak RSS under 64 concurrent fresh 9 MP enrichments.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-.build/release/attache}
duration=${DURATION:-10s}
work=$(mktemp -d)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
cleanup() { kill "$origin" "$server" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

photo=/usr/share/backgrounds/2004default.jpg   # 3840x2400, from gnome-backgrounds (make bench-deps)
mkdir -p "$work/root"
cp "$photo" "$work/root/photo9mp.jpg"
cp Samples/media/photo.jpg "$work/root/small.jpg"
oport=$(free_port); sport=$(free_port)
"$bin" origin --root "$work/root" --port "$oport" > "$work/origin.log" 2>&1 &
origin=$!
"$bin" serve --port "$sport" --allow-address 127.0.0.1/32 --media-dir "$work/media" --deadline 10s \
  --max-in-flight 512 > "$work/serve.log" 2>&1 &
server=$!
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$sport/healthz" && break; sleep 0.1; done
base="http://127.0.0.1:$sport"

lua() {  # $1: payload with ORIGIN and N placeholders; N becomes a per-request counter when $2 = fresh
  cat > "$work/$3.lua" <<LUA
counter = 0
math.randomseed(os.time())
local prefix = math.random(1, 1000000000)
request = function()
  counter = counter + 1
  local body = string.gsub([[$1]], "ORIGIN", "http://127.0.0.1:$oport")
  if "$2" == "fresh" then body = string.gsub(body, "N", prefix .. "-" .. counter) end
  return wrk.format("POST", "/v1/enrich", {["Content-Type"] = "application/json"}, body)
end
done = function(summary, latency, requests)
  local non200 = summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout
  io.write(string.format("  %.0f req/s  p50 %.2f ms  p99 %.2f ms  max %.2f ms  requests %d  non-200/errors %d\n",
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    latency.max / 1000, summary.requests, non200))
end
LUA
}
lua '{"aps":{"alert":"hello","badge":1},"k":"v"}' same passthrough
lua '{"aps":{"alert":"hi","mutable-content":1},"fcm_options":{"image":"ORIGIN/small.jpg"}}' same cached
lua '{"aps":{"alert":"hi","mutable-content":1},"fcm_options":{"image":"ORIGIN/photo9mp.jpg?n=N"}}' fresh fresh

curl -s -o /dev/null --data-binary "{\"aps\":{\"alert\":\"hi\",\"mutable-content\":1},\"fcm_options\":{\"image\":\"http://127.0.0.1:$oport/small.jpg\"}}" "$base/v1/enrich"
echo "passthrough (wrk -t2 -c64 -d$duration):"
wrk -t2 -c64 -d"$duration" -s "$work/passthrough.lua" "$base" | tail -1
echo "enrich, media cached (wrk -t2 -c64 -d$duration):"
wrk -t2 -c64 -d"$duration" -s "$work/cached.lua" "$base" | tail -1
curl -s "$base/metrics" | grep -E '^attache_requests_total' | sed 's/^/  /'

# The fresh phase on a service of its own, so its peak RSS is what 64 concurrent 9 MP
# enrichments take, not what the phases before left behind.
kill "$server"; wait "$server" 2>/dev/null || true
sport=$(free_port)
"$bin" serve --port "$sport" --allow-address 127.0.0.1/32 --media-dir "$work/media2" --deadline 10s \
  --max-in-flight 512 > "$work/serve2.log" 2>&1 &
server=$!
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$sport/healthz" && break; sleep 0.1; done
echo "enrich, fresh 9 MP JPEG downloads, 64 at once, new service (wrk -t2 -c64 -d$duration):"
wrk -t2 -c64 -d"$duration" --timeout 15s -s "$work/fresh.lua" "http://127.0.0.1:$sport" | tail -1
echo "peak RSS of that service: $(( $(grep VmHWM /proc/$server/status | awk '{print $2}') / 1024 )) MB"
