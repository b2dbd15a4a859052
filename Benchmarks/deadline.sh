#!/usr/bin/env bash
# Lateness: how long after its deadline each answer lands (negative: before it), when the origin
# never answers. Tests only prove "did not wait" (deadline + 1 s); this measures the promise —
# every answer within 20 ms of its deadline, also with 200 payloads expiring at once:
#   enrich   N processes, one payload each (whole process, start and exit included; and in-process)
#   batch    200 payloads with distinct hung URLs, all in flight together (--concurrency 200)
#   service  200 concurrent requests to `attache serve`, measured by the client
#   sweep    `attache timeline --sweep` on an image that arrives after 400 ms, 20 ms steps: the
#            flip point it finds, against the 400 ms it cannot beat (the test only bounds it)
# Anchor, in the same run: curl --max-time against the same origin (its own timer's lateness).
#   usage: Benchmarks/deadline.sh [ATTACHE_BINARY]   (N=20 processes by default; DEADLINE_MS=500)
set -euo pipefail
cd "$(dirname "$0")/.."
. Benchmarks/lib.sh
bin=${1:-.build/release/attache}
n=$(setting N 20 8)
deadline=${DEADLINE_MS:-500}
tmp=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; rm -rf "$tmp"' EXIT
# p50, p99 and max of the numbers on stdin (ms), as one table row.
stats() {
  python3 -c '
import sys
v = sorted(float(x) for x in sys.stdin.read().split())
q = lambda p: v[min(len(v) - 1, int(round(p * (len(v) - 1))))]
print(f"| {sys.argv[1]} | {len(v)} | {q(0.5):+.1f} ms | {q(0.99):+.1f} ms | {v[-1]:+.1f} ms |")' "$1"
}

port=$(free_port)
"$bin" origin --root Samples/media --port "$port" > "$tmp/origin.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do grep -q listening "$tmp/origin.log" 2>/dev/null && break; sleep 0.1; done
hung="http://127.0.0.1:$port/photo.jpg?hang=1"

echo "deadline ${deadline} ms, origin never answers; lateness = answer time - deadline"
echo
echo "| what | answers | p50 | p99 | max |"
echo "|---|---|---|---|---|"

# Anchor: curl's own timer against the same hung origin (whole process).
for i in $(seq "$n"); do
  s=$(date +%s%N)
  curl -s -o /dev/null --max-time "$(python3 -c "print($deadline/1000)")" "$hung&c=$i" || true
  echo $(( ($(date +%s%N) - s) / 1000 - deadline * 1000 )) | awk '{print $1/1000}'
done | stats "curl --max-time (anchor), whole process"

# attache enrich, one process per payload: whole process, and as its report says.
: > "$tmp/enrich-in"
for i in $(seq "$n"); do
  echo "{\"aps\":{\"alert\":\"d\",\"mutable-content\":1},\"image-url\":\"$hung&e=$i\"}" > "$tmp/p.json"
  s=$(date +%s%N)
  "$bin" enrich "$tmp/p.json" --deadline "${deadline}ms" --allow-address 127.0.0.1/32 --media-dir "$tmp/m" \
    --report "$tmp/r.json" > /dev/null 2>&1
  echo $(( ($(date +%s%N) - s) / 1000 - deadline * 1000 )) | awk '{print $1/1000}' >> "$tmp/enrich-wall"
  python3 -c "import json; r=json.load(open('$tmp/r.json')); print(r['elapsed_ms'] - r['deadline_ms'])" >> "$tmp/enrich-in"
done
stats "attache enrich, whole process" < "$tmp/enrich-wall"
stats "attache enrich, in process (report)" < "$tmp/enrich-in"

# attache batch: 200 payloads expiring together.
for i in $(seq 200); do
  echo "{\"aps\":{\"alert\":\"b$i\",\"mutable-content\":1},\"image-url\":\"$hung&b=$i\"}"
done > "$tmp/batch.jsonl"
"$bin" batch "$tmp/batch.jsonl" --output "$tmp/batch-out.jsonl" --deadline "${deadline}ms" --concurrency 200 \
  --allow-address 127.0.0.1/32 --media-dir "$tmp/m" > /dev/null 2>&1
python3 -c "
import json
for line in open('$tmp/batch-out.jsonl.report.jsonl'):
    r = json.loads(line); print(r['elapsed_ms'] - $deadline)" | stats "attache batch, 200 at once (report)"

# attache serve: 200 concurrent requests, timed by the client.
sport=$(free_port)
"$bin" serve --port "$sport" --allow-address 127.0.0.1/32 --media-dir "$tmp/sm" --max-in-flight 1000 > "$tmp/serve.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$sport/healthz" && break; sleep 0.1; done
python3 - "$sport" "$hung" "$deadline" <<'EOF' | stats "attache serve, 200 concurrent (client)"
import http.client, sys, threading, time
port, hung, deadline = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
connections = [http.client.HTTPConnection("127.0.0.1", port, timeout=30) for _ in range(200)]
for c in connections: c.connect()
results, barrier = [], threading.Barrier(200)
def one(i, c):
    body = '{"aps":{"alert":"s%d","mutable-content":1},"image-url":"%s&s=%d"}' % (i, hung, i)
    barrier.wait()
    start = time.monotonic()
    c.request("POST", "/v1/enrich", body, {"Attache-Deadline-Ms": str(deadline)})
    c.getresponse().read()
    results.append((time.monotonic() - start) * 1000 - deadline)
threads = [threading.Thread(target=one, args=(i, c)) for i, c in enumerate(connections)]
for t in threads: t.start()
for t in threads: t.join()
print("\n".join(f"{r:.3f}" for r in results))
EOF
echo
echo "target: every answer within 20 ms of its deadline (p99 and max <= +20 ms)"

# The sweep's precision: the smallest deadline at which an image delayed 400 ms makes it.
echo "{\"aps\":{\"alert\":\"w\",\"mutable-content\":1},\"image-url\":\"http://127.0.0.1:$port/alpha.png?delay=400\"}" > "$tmp/sweep.json"
flip=$("$bin" timeline "$tmp/sweep.json" --sweep 300ms...700ms --steps 21 --allow-address 127.0.0.1/32 2>&1 \
  | awk '/image-url: / {print $2}' | tail -1)
echo "sweep: an image 400 ms away flips at ${flip:-none} (20 ms steps; the floor is 400 ms + fetch and render)"
