#!/usr/bin/env bash
# What a relayed request costs in instructions, which unlike time or CPU does not move with the
# load of a shared machine: valgrind's callgrind counts every instruction the proxy runs while
# h2load sends N requests (8 connections, 32 streams each, after 2,000 unmeasured), for nghttpx
# (nghttp2's C HTTP/2 proxy, one process) and `attache relay` in front of the same nghttpd upstream
# over TLS as in the relay benchmark: a passthrough (no mutable-content) through both, and the
# relay's enrichment with the media already cached, without traces and with every span sampled
# and exported (to a local OTLP/HTTP sink). Per measure: instructions per request, and the relay's
# against nghttpx's (traces on: against traces off). Then where nghttpx's go, by object file, and
# the relay's, by library, for a passthrough and a cached enrichment
# (Benchmarks/tools/callgrind_libraries.py: a function is its Swift module's, the runtime's
# retains and releases its callers'); the HTTP/2 library's share of each (swift-nio-http2 against
# nghttp2: the floor under the relay while it speaks HTTP/2 through swift-nio-http2); and the
# functions of a passthrough that run most (their own instructions, callers not included). A ratio
# here is the work per request; the relay benchmark's rates also depend on how that work spreads
# over threads.
#   usage: Benchmarks/relay-instructions.sh [ATTACHE_BINARY]   (N=10000 requests; QUICK=1: 3000)
set -euo pipefail
cd "$(dirname "$0")/.."
. Benchmarks/lib.sh
bin=${1:-.build/release/attache}
requests=$(setting N 10000 3000)
work=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT

need_packages valgrind nghttp2-client nghttp2-proxy nghttp2-server openssl

start_apns_upstream "$work"
pids+=("$upstream")
start_origin Samples/media "$work/origin.log"
pids+=("$origin")
callgrind_copy

printf '{"aps":{"alert":"plain"},"campaign":42}' > "$work/plain.json"
printf '{"aps":{"alert":"sale","mutable-content":1},"image-url":"http://127.0.0.1:%s/photo.jpg"}' "$port" > "$work/media.json"
headers=(-H "authorization: bearer eyJhbGciOiJFUzI1NiJ9.e30.c2ln" -H "apns-topic: com.example.app" -H "apns-push-type: alert")

# count NAME BODY -- PROXY...: callgrind_count with an APNs request (`-m 32`).
count() {
  local body=$2
  load=(-m 32 "${headers[@]}" -d "$work/$body")
  callgrind_count "$1" /3/device/abc "${@:3}"
}

relay=("$work/attache-serve" relay --port '$listen' --apns-upstream "https://127.0.0.1:$up" --upstream-ca "$work/ca.pem"
       --allow-address 127.0.0.1/32 --media-dir "$work/media" --public-base-url https://cdn.example.com/m)
nghttpx_=(nghttpx --single-process "--frontend=127.0.0.1,\$listen;no-tls" "--backend=127.0.0.1,$up;;proto=h2;tls;sni=localhost"
          --cacert="$work/ca.pem" --workers=1 --errorlog-file="$work/nghttpx-errors.log" --conf=/dev/null)
anchor=$(count nghttpx plain.json -- "${nghttpx_[@]}")
passthrough=$(count relay plain.json -- "${relay[@]}")
cached=$(count cached media.json -- "${relay[@]}")
start_span_sink "$work/sink.log"
pids+=("$sink_pid")
traced=$(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$sink" OTEL_TRACES_SAMPLER=always_on count traced media.json -- "${relay[@]}")

echo "instructions per request (callgrind, $requests requests, h2load -c 8 -m 32, upstream nghttpd over TLS)"
printf '%-40s %9d\n' "nghttpx, passthrough" "$anchor"
printf '%-40s %9d  %5.2fx nghttpx\n' "attache relay, passthrough" "$passthrough" "$(echo "$passthrough / $anchor" | bc -l)"
printf '%-40s %9d  %5.2fx nghttpx passthrough\n' "attache relay, enriched (cached)" "$cached" "$(echo "$cached / $anchor" | bc -l)"
printf '%-40s %9d  %5.2fx traces off (%+d)\n' "attache relay, enriched, traces on" "$traced" "$(echo "$traced / $cached" | bc -l)" \
  "$((traced - cached))"
echo
echo "where nghttpx's instructions go (per request, a function's own, by its object file):"
python3 Benchmarks/tools/callgrind_libraries.py --by-object "$work/nghttpx.callgrind.1" "$requests" | tee "$work/nghttpx.libraries"
echo "where the relay's instructions go, by library (per request, the runtime's charged to its callers):"
echo "passthrough:"
python3 Benchmarks/tools/callgrind_libraries.py "$work/relay.callgrind.1" "$requests" | tee "$work/relay.libraries"
echo "enriched (cached):"
python3 Benchmarks/tools/callgrind_libraries.py "$work/cached.callgrind.1" "$requests"
# The HTTP/2 library alone, against the other proxy's: what the relay cannot go below while it
# speaks HTTP/2 through swift-nio-http2.
library() { awk -v name="$1" '$1 == name { gsub(",", "", $2); print $2 }' "$2"; }
http2=$(library swift-nio-http2 "$work/relay.libraries"); nghttp2=$(library nghttp2 "$work/nghttpx.libraries")
printf 'the HTTP/2 library per passthrough: swift-nio-http2 %d, nghttp2 %d (%.1fx); swift-nio-http2 alone is %.2fx all of nghttpx\n' \
  "$http2" "$nghttp2" "$(echo "$http2 / $nghttp2" | bc -l)" "$(echo "$http2 / $anchor" | bc -l)"
echo
echo "where the relay's passthrough instructions go (a function's own, the largest):"
# The relay's dump of the counted requests (its exit's, with counting off, holds none). The
# listing is read to its end: a reader that stopped early would fail the pipeline (SIGPIPE).
callgrind_annotate --inclusive=no "$work/relay.callgrind.1" 2>/dev/null | grep -E '^ *[0-9,]+ +\( *[0-9.]+%\) ' | grep -v "PROGRAM TOTALS" \
  | sed -n 1,12p | sed -E 's/^ *[0-9,]+ +\( *([0-9.]+%)\) +[^:]*:(.*) \[[^]]*\]$/  \1  \2/' | swift demangle --simplified | cut -c1-110
