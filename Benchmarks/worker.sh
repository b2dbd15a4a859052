#!/usr/bin/env bash
# `attache worker` through JetStream with cached media: N payloads naming one image (downloaded
# and rendered once, then from the cache) published by nats-py to a fresh nats-server, one worker
# vs two on this machine. Prints payloads/s (first publish to last output) and the latency from
# each payload's publish to its output's arrival at a subscriber, p50 and p99. The publisher is
# measured alone too (a worker that only acked could go no faster than it publishes).
#   usage: Benchmarks/worker.sh [ATTACHE_BINARY]   (N=5000 payloads per run)
set -euo pipefail
cd "$(dirname "$0")/.."
. Benchmarks/lib.sh
bin=${1:-.build/release/attache}
n=$(setting N 5000 1000)
python=${ATTACHE_PYTHON:-.build/tools/bin/python}
tmp=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
source Tests/cli/nats.sh

oport=$(free_port)
"$bin" origin --root Samples/media --port "$oport" > "$tmp/origin.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do grep -q listening "$tmp/origin.log" 2>/dev/null && break; sleep 0.1; done
payload="{\"aps\":{\"alert\":\"{i}\",\"mutable-content\":1},\"image-url\":\"http://127.0.0.1:$oport/photo.jpg\"}"

# One run: a fresh server, WORKERS workers, N payloads → "payloads/s p50 p99".
run() {  # workers
  local dir=$tmp/run-$1-$RANDOM started=() w
  start_nats "$dir"
  for w in $(seq "$1"); do
    "$bin" worker --nats "$nats" --media-dir "$dir/media-$w" --allow-address 127.0.0.1/32 \
      --concurrency 256 > "$dir/worker-$w.log" 2>&1 &
    started+=($!)
  done
  # Warm: the image is fetched and rendered once before the clock starts.
  "$python" Samples/queue/pipeline.py run "$nats" 1 "$payload" > /dev/null
  "$python" Samples/queue/pipeline.py run "$nats" "$n" "$payload"
  kill -TERM "${started[@]}"; wait "${started[@]}" 2>/dev/null || true
  kill "$nats_pid"; wait "$nats_pid" 2>/dev/null || true
}

# The publisher alone: JetStream publishes with acks, no worker.
publisher() {
  local start end
  start_nats "$tmp/pub"
  start=$(date +%s%N)
  "$python" Samples/queue/pipeline.py publish "$nats" "$n" "$payload"
  end=$(date +%s%N)
  kill "$nats_pid"; wait "$nats_pid" 2>/dev/null || true
  python3 -c "print(f'{$n / (($end - $start) / 1e9):.0f}')"
}

echo "| $n payloads, cached media | payloads/s | p50 ms | p99 ms |"
echo "|---|---|---|---|"
echo "| nats-py publishing alone (no worker) | $(publisher) | | |"
read -r rate p50 p99 <<< "$(run 1)"
echo "| 1 worker | $rate | $p50 | $p99 |"
read -r rate p50 p99 <<< "$(run 2)"
echo "| 2 workers | $rate | $p50 | $p99 |"
