#!/usr/bin/env bash
# The demo: a local origin serving Samples/media on loopback, and every sample payload enriched
# through it — offline. Each payload to send is printed, then a one-line outcome.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-.build/release/attache}
port=8765
export ATTACHE_ALLOW_ADDRESSES=127.0.0.1/32   # the demo's origin is on loopback; nothing else is allowed

"$bin" origin --root Samples/media --port "$port" > /tmp/attache-demo-origin.log 2>&1 &
origin=$!
trap 'kill $origin 2>/dev/null || true' EXIT
for _ in $(seq 50); do
  grep -q listening /tmp/attache-demo-origin.log 2>/dev/null && break
  sleep 0.1
done
grep -q listening /tmp/attache-demo-origin.log || { echo "origin did not start:"; cat /tmp/attache-demo-origin.log; exit 1; }
echo "sample origin on http://127.0.0.1:$port (Samples/media); media goes to ./attache-media"
echo

for payload in Samples/payloads/*.json; do
  name=$(basename "$payload")
  echo "── $name"
  # The 2 s deadline makes fallback-timeout.json (whose origin waits 5 s) fall back on purpose.
  "$bin" enrich "$payload" --deadline 2s --media-dir attache-media --report /tmp/attache-demo-report.json \
    2> >(grep -v "allowance in force" >&2)
  echo
  python3 - /tmp/attache-demo-report.json <<'PY' 2>/dev/null || cat /tmp/attache-demo-report.json
import json, sys
r = json.load(open(sys.argv[1]))
ok = sum(a["outcome"] == "attached" for a in r["attachments"])
why = f" ({r['reason']})" if r["reason"] else ""
failed = [a for a in r["attachments"] if a["outcome"] == "failed" and a.get("message")]
said = f"; {failed[0]['id']}: {failed[0]['message']}" if failed else ""
print(f"   → {r['outcome']}{why}: {ok}/{len(r['attachments'])} attached in {r['elapsed_ms']:.0f} ms, {r['payload_bytes']} bytes{said}")
PY
done

# Media over the targets a deployment sets (Apple's caps are 50 MB and 5 MB; these samples are
# small, so the targets are made smaller to show it): made to fit, by the same code as above.
echo "── media made to fit a target (attache convert)"
mkdir -p attache-media/converted
"$bin" convert Samples/media/clip-h264.mkv -o attache-media/converted/clip.mp4 --movie-max-bytes 30000
"$bin" convert Samples/media/clip-vp9.webm -o attache-media/converted/first-second.mp4 --movie-max-bytes 40000 --movie-keep 1s
"$bin" convert Samples/media/sound.wav -o attache-media/converted/sound.m4a --sound-max-bytes 20000
"$bin" convert Samples/media/movie.webp -o attache-media/converted/movie.mp4
"$bin" convert Samples/media/animated.gif -o attache-media/converted/animated.mp4 --image-max-bytes 1000
