#!/usr/bin/env bash
# What traces cost `attache serve` in instructions, which unlike a rate or CPU time does not move
# with the load of a shared machine: valgrind's callgrind counts every instruction the service runs
# while h2load sends N cached enrichments (HTTP/1.1, 8 connections, after 2,000 unmeasured) of
# Samples' photo.jpg from a loopback origin, once with no OTEL_* variable (no tracer exists) and
# once with every span sampled and exported to a local OTLP/HTTP sink. Prints instructions per
# request of each, and the functions whose own instructions traces add most. Goal (with
# Benchmarks/serve.sh's rate): traces on cost at most 5 % of a cached enrichment.
#   usage: Benchmarks/serve-instructions.sh [ATTACHE_BINARY]   (N=10000 requests; QUICK=1: 3000)
set -euo pipefail
cd "$(dirname "$0")/.."
. Benchmarks/lib.sh
bin=${1:-.build/release/attache}
requests=$(setting N 10000 3000)
work=${WORK:-$(mktemp -d)}
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null' EXIT

need_packages valgrind nghttp2-client

start_origin Samples/media "$work/origin.log"
pids+=("$origin")
callgrind_copy
start_span_sink "$work/sink.log"
pids+=("$sink_pid")

printf '{"aps":{"alert":"sale","mutable-content":1},"image-url":"http://127.0.0.1:%s/photo.jpg"}' "$port" > "$work/media.json"
load=(--h1 -H "content-type: application/json" -d "$work/media.json")
service=("$work/attache-serve" --port '$listen' --allow-address 127.0.0.1/32 --media-dir "$work/media" --deadline 10s
         --max-in-flight 512)
off=$(callgrind_count untraced /v1/enrich -- "${service[@]}")
on=$(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$sink" OTEL_TRACES_SAMPLER=always_on callgrind_count traced /v1/enrich -- "${service[@]}")

echo "instructions per request (callgrind, $requests cached enrichments, h2load --h1 -c 8)"
printf '%-40s %9d\n' "attache serve, traces off" "$off"
printf '%-40s %9d  %5.2fx traces off (%+d; goal <= 1.05x)\n' "attache serve, traces on" "$on" "$(echo "$on / $off" | bc -l)" "$((on - off))"
echo
echo "what traces add, by function (its own instructions per request, on minus off, the largest):"
python3 Benchmarks/tools/callgrind_libraries.py --difference "$work/traced.callgrind.1" "$work/untraced.callgrind.1" "$requests"
