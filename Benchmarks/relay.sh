#!/usr/bin/env bash
# One hop's price, in one run: h2load sending the same stream of APNs notifications
# (POST /3/device/<token> with a provider token, apns-topic and apns-push-type, 8 connections)
# to an upstream directly, through `attache relay`, and through nghttpx (nghttp2's C HTTP/2
# reverse proxy, with as many workers as the relay has event loops, one per core) in front of the
# same upstream. The upstream is nghttpd over TLS with a test CA, answering 200 from a file; its
# direct rate shows it is not the bottleneck. Each measure is a window of D seconds (after a
# second's warm-up) at 32 and at 100 streams per connection: passthrough (no mutable-content)
# through both, then enriched with the media already cached (the relay only), and one request at
# a time (h2load -c 1 -m 1). Per measure: the rate, the request time's p50, p99 and max (from
# h2load's log), answers that were not 2xx, and CPU per request of the proxy and of the upstream
# (from /proc); at the end the relay's peak RSS. Goals: passthrough at least 0.4x nghttpx's rate
# at both depths, no lower at 100 than at 32; the relay's CPU at most 30 us per request and the
# upstream's behind it within 1.3x of behind nghttpx; cached enrichment at least 0.25x nghttpx's
# passthrough rate; one at a time, p99 at most 0.3 ms above nghttpx's; peak RSS at most 64 MB.
# Then traces: two more relays of the same binary, started together and warmed alike by a window,
# one with OTEL_EXPORTER_OTLP_ENDPOINT set (every span sampled, exported to a local OTLP/HTTP sink
# that counts them once stopped) and its twin without; cached enrichment at m32 in nine rounds,
# each a window of three h2load at once, one per relay: the twin, the traced one, and the relay
# measured above (two untraced relays: their ratio is the noise between processes). Measured
# together, the three share the drift of a shared machine's speed, which is larger than the
# difference measured and, in windows taken in turns, landed on one relay and not the other; each
# has a third of the machine, so its rate is about a third of what it serves alone. Goal: the
# median round's traced rate at most 5 % below its twin's. Then the spans that reached the sink
# against the two each payload makes (its own and its attachment's): spans the exporter could not
# keep up with are dropped, and the rate would not show it. With no OTEL_* variable no tracer
# exists, and a payload costs one check. Benchmarks/relay-instructions.sh counts what traces add
# in instructions, which the machine's load does not move.
#   usage: Benchmarks/relay.sh [ATTACHE_BINARY]   (D=10 seconds per measure; QUICK=1: 3)
set -euo pipefail
cd "$(dirname "$0")/.."
. Benchmarks/lib.sh
bin=${1:-.build/release/attache}
seconds=$(setting D 10 3)
work=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT

need_packages nghttp2-client nghttp2-proxy nghttp2-server openssl

start_apns_upstream "$work"
pids+=("$upstream")
start_origin Samples/media "$work/origin.log"
pids+=("$origin")

relay_port=$(free_port)
"$bin" relay --port "$relay_port" --apns-upstream "https://127.0.0.1:$up" --upstream-ca "$work/ca.pem" \
  --allow-address 127.0.0.1/32 --media-dir "$work/media" --public-base-url https://cdn.example.com/m > "$work/relay.log" 2>&1 &
relay=$!
pids+=($!)
proxy_port=$(free_port)
nghttpx "--frontend=127.0.0.1,$proxy_port;no-tls" "--backend=127.0.0.1,$up;;proto=h2;tls;sni=localhost" --cacert="$work/ca.pem" \
  --workers="$(nproc)" --errorlog-file="$work/nghttpx.log" --conf=/dev/null > /dev/null 2>&1 &
nghttpx=$!
pids+=($!)
for _ in $(seq 100); do grep -q listening "$work/relay.log" 2>/dev/null && break; sleep 0.05; done
sleep 0.5

printf '{"aps":{"alert":"plain"},"campaign":42}' > "$work/plain.json"
printf '{"aps":{"alert":"sale","mutable-content":1},"image-url":"http://127.0.0.1:%s/photo.jpg"}' "$port" > "$work/media.json"
headers=(-H "authorization: bearer eyJhbGciOiJFUzI1NiJ9.e30.c2ln" -H "apns-topic: com.example.app" -H "apns-push-type: alert")

# One measure: h2load for the window, its per-request log, and the CPU the proxy (pid, or - for
# none) and the upstream spent meanwhile (not while $together is set: measures run at once share
# the upstream); a line of figures, and the same to $work/NAME.num.
measure() {  # label url body name proxy-pid [h2load's load options]
  local load=("${@:6}")
  [ ${#load[@]} -gt 0 ] || load=(-c 8 -m 32)
  local proxy_before=0 up_before
  # A second's warm-up of its own: h2load leaves the requests of its --warm-up-time out of its
  # count, and the CPU read from /proc around it would count that second's work too.
  h2load -D 1 "${load[@]}" "${headers[@]}" -d "$3" "$2" > "$work/$4.warm" 2>&1
  [ "$5" = - ] || proxy_before=$(ticks "$5")
  up_before=$(ticks "$upstream")
  h2load -D "$seconds" "${load[@]}" "${headers[@]}" -d "$3" --log-file="$work/$4.log" "$2" > "$work/$4.out" 2>&1
  local proxy_ticks=0 up_ticks
  [ "$5" = - ] || proxy_ticks=$(( $(ticks "$5") - proxy_before ))
  up_ticks=$(( $(ticks "$upstream") - up_before ))
  [ -z "${together:-}" ] || up_ticks=-
  python3 - "$1" "$work/$4.out" "$work/$4.log" "$work/$4.num" "$proxy_ticks" "$up_ticks" <<'PY'
import re, sys
label, out, log, num, proxy_ticks, up_ticks = sys.argv[1:]
text = open(out).read()
done = re.search(r"requests: (\d+) total, \d+ started, (\d+) done, (\d+) succeeded", text)
times = sorted(int(line.split()[2]) for line in open(log) if line.strip())
rate = float(re.search(r"finished in [\d.]+\w+, ([\d.]+) req/s", text).group(1))
count = max(len(times), 1)
at = lambda q: times[min(len(times) - 1, int(q * len(times)))] / 1000 if times else 0
sent = int(done.group(2))
proxy_us = int(proxy_ticks) * 10000 / max(sent, 1)
up_us = int(up_ticks) * 10000 / max(sent, 1) if up_ticks != "-" else 0
print(f"{label:<44} {rate:9.0f} req/s  p50 {at(0.5):6.2f}  p99 {at(0.99):6.2f}  max {times[-1] / 1000 if times else 0:7.2f} ms"
      f"  not 2xx {int(done.group(2)) - int(done.group(3))}" + (f"  cpu {proxy_us:5.1f} us" if proxy_ticks != "0" else "")
      + (f"  upstream {up_us:4.1f} us" if up_ticks != "-" else ""))
open(num, "w").write(f"{rate} {at(0.5)} {at(0.99)} {proxy_us} {up_us}")
PY
}

echo "windows of $seconds s, 8 connections, upstream nghttpd over TLS, $(nproc) cores; times in ms, CPU per request"
curl -s --http2-prior-knowledge -o /dev/null "${headers[@]}" --data-binary @"$work/media.json" "http://127.0.0.1:$relay_port/3/device/abc"
relay_url="http://127.0.0.1:$relay_port/3/device/abc"
proxy_url="http://127.0.0.1:$proxy_port/3/device/abc"
measure "direct to the upstream (TLS), m32" "https://127.0.0.1:$up/3/device/abc" "$work/plain.json" direct -
for m in 32 100; do
  measure "through nghttpx, passthrough, m$m" "$proxy_url" "$work/plain.json" "proxy$m" "$nghttpx" -c 8 -m "$m"
  measure "through attache relay, passthrough, m$m" "$relay_url" "$work/plain.json" "relay$m" "$relay" -c 8 -m "$m"
  measure "through attache relay, enriched (cached), m$m" "$relay_url" "$work/media.json" "enriched$m" "$relay" -c 8 -m "$m"
done
# Two fresh relays, started together and warmed alike, one traced and its twin not: they differ in
# traces alone, not in what each has served before.
relay_args=(--apns-upstream "https://127.0.0.1:$up" --upstream-ca "$work/ca.pem" --allow-address 127.0.0.1/32
            --media-dir "$work/media" --public-base-url https://cdn.example.com/m)
traced_port=$(free_port)
twin_port=$(free_port)
start_span_sink "$work/sink.log"
pids+=("$sink_pid")
OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$sink" OTEL_TRACES_SAMPLER=always_on \
  "$bin" relay --port "$traced_port" "${relay_args[@]}" > "$work/traced.log" 2>&1 &
traced=$!
pids+=($!)
"$bin" relay --port "$twin_port" "${relay_args[@]}" > "$work/twin.log" 2>&1 &
twin=$!
pids+=($!)
for log in traced twin; do
  for _ in $(seq 100); do grep -q listening "$work/$log.log" 2>/dev/null && break; sleep 0.05; done
done
traced_url="http://127.0.0.1:$traced_port/3/device/abc"
twin_url="http://127.0.0.1:$twin_port/3/device/abc"
# Each warmed by a window of the same work first: a fresh process's first seconds (its allocator's
# arenas, its first batches' buffers growing) are not what traces cost a relay that has been running.
for url in "$traced_url" "$twin_url"; do
  curl -s --http2-prior-knowledge -o /dev/null "${headers[@]}" --data-binary @"$work/media.json" "$url"
done
h2load -D "$seconds" -c 8 -m 32 "${headers[@]}" -d "$work/media.json" "$traced_url" > "$work/traced-warm-up.out" 2>&1
h2load -D "$seconds" -c 8 -m 32 "${headers[@]}" -d "$work/media.json" "$twin_url" > /dev/null 2>&1
rounds=9
together=1
for round in $(seq "$rounds"); do
  at_once=()
  measure "… at once: a fresh relay, traces off" "$twin_url" "$work/media.json" "untraced$round" "$twin" > "$work/untraced$round.line" &
  at_once+=($!)
  measure "… at once: a fresh relay, traces on (every span sampled)" "$traced_url" "$work/media.json" "traced$round" "$traced" > "$work/traced$round.line" &
  at_once+=($!)
  measure "… at once: the first relay" "$relay_url" "$work/media.json" "again$round" "$relay" > "$work/again$round.line" &
  at_once+=($!)
  wait "${at_once[@]}"
  cat "$work/untraced$round.line" "$work/traced$round.line" "$work/again$round.line"
done
together=""
# The spans that reached the sink, against the payloads the traced relay was sent (the curl, and
# every request h2load started in the warm-up and the window: those in flight when a window ends
# are enriched too): a cached payload makes two, its own and its attachment's. Stopped first, the
# relay exports what it still holds.
kill "$traced" "$twin"
wait "$traced" "$twin" 2>/dev/null || true
stop_span_sink "$work/sink.log"
enriched=$(sed -n 's/^requests: [0-9]* total, \([0-9]*\) started, .*/\1/p' "$work/traced-warm-up.out" "$work"/traced[0-9]*.warm "$work"/traced[0-9]*.out)
one=(-c 1 -m 1)
measure "one at a time: direct" "https://127.0.0.1:$up/3/device/abc" "$work/plain.json" direct1 - "${one[@]}"
measure "one at a time: through nghttpx" "$proxy_url" "$work/plain.json" proxy1 "$nghttpx" "${one[@]}"
measure "one at a time: through attache relay" "$relay_url" "$work/plain.json" relay1 "$relay" "${one[@]}"
peak=$(awk '/VmHWM/ { print $2 }' "/proc/$relay/status")
python3 - "$work" "$peak" "$((1 + $(echo $enriched | tr ' ' '+')))" "$spans" "$rounds" <<'PY'
import sys
w, peak, enriched, spans, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
read = lambda name: [float(x) for x in open(f"{w}/{name}.num").read().split()]
rate, p50, p99, cpu, up = range(5)
proxy32, proxy100, relay32, relay100 = read("proxy32"), read("proxy100"), read("relay32"), read("relay100")
enriched32, enriched100, proxy1, relay1 = read("enriched32"), read("enriched100"), read("proxy1"), read("relay1")
print(f"relay passthrough / nghttpx rate: {relay32[rate] / proxy32[rate]:.2f}x at m32, {relay100[rate] / proxy100[rate]:.2f}x at m100 "
      f"(goal >= 0.4x); m100 / m32: {relay100[rate] / relay32[rate]:.2f} (goal >= 1)")
print(f"CPU per passthrough request: relay {relay32[cpu]:.1f} us, nghttpx {proxy32[cpu]:.1f} us (goal <= 30 us); upstream behind the relay "
      f"{relay32[up]:.1f} us, behind nghttpx {proxy32[up]:.1f} us: {relay32[up] / max(proxy32[up], 0.1):.2f}x (goal <= 1.3x)")
print(f"relay enriched, media cached / nghttpx passthrough rate: {enriched32[rate] / proxy32[rate]:.2f}x at m32, "
      f"{enriched100[rate] / proxy100[rate]:.2f}x at m100 (goal >= 0.25x)")
print(f"one at a time, p99 through the relay - through nghttpx: {relay1[p99] - proxy1[p99]:+.2f} ms (goal <= +0.3 ms)")
print(f"relay peak RSS: {peak / 1024:.0f} MB (goal <= 64 MB)")
rounds = range(1, count + 1)
ratios = lambda name: sorted((read(f"{name}{i}")[rate] / read(f"untraced{i}")[rate], i) for i in rounds)
listed = lambda rs: ", ".join(f"{r:.2f}" for r, _ in sorted(rs, key=lambda p: p[1]))
pairs, again = ratios("traced"), ratios("again")
_, median = pairs[count // 2]
untraced, traced = read(f"untraced{median}"), read(f"traced{median}")
print(f"cached enrichment with traces on / off, measured at once: {traced[rate] / untraced[rate]:.2f}x the rate, the median of {count} rounds "
      f"({listed(pairs)}; goal >= 0.95x), "
      f"{traced[cpu] / untraced[cpu]:.2f}x the relay's CPU per request ({traced[cpu] - untraced[cpu]:+.0f} us); "
      f"spans exported: {spans} of {2 * enriched} ({spans / max(2 * enriched, 1):.0%}; two per payload)")
print(f"two relays without traces (the first one / the fresh one): {again[count // 2][0]:.2f}x the rate, the median of {count} rounds ({listed(again)})")
PY
