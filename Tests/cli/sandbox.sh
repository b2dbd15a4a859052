#!/usr/bin/env bash
# The decoder sandbox as a process: while `attache serve` decodes many heavy files in its
# attache-decode helpers, every helper is sent SIGSEGV from outside, again and again. Every request
# still gets a 200 with a payload, /healthz stays 200, and once the killing stops the pool is back
# to its size and enriches again. Traffic stays on 127.0.0.1.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
cleanup() { kill "$origin" "$server" 2>/dev/null; [ -n "${killer:-}" ] && kill "$killer" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

start_origin
sport=$(free_port)
# Exact poster frames at 9.5 s of a clip with one keyframe every 10 s: ~300 1080p frames decoded
# per movie, so the helpers are busy for seconds; photos in between.
"$bin" serve --port "$sport" --allow-address 127.0.0.1/32 --media-dir "$tmp/media" --cache-ttl 0 \
  --poster exact --decoders 2 > "$tmp/serve.log" 2>&1 &
server=$!
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$sport/healthz" && break; sleep 0.1; done
helpers() { pgrep -P "$server" -f attache-decode; }
check "the service runs 2 sandboxed helpers (got $(helpers | wc -l))" "[ $(helpers | wc -l) -eq 2 ]"

n=40
clients=()
for i in $(seq $n); do
  if [ $((i % 2)) -eq 0 ]; then
    body="{\"aps\":{\"alert\":\"m$i\",\"mutable-content\":1},\"com.urbanairship.media_attachment\":{\"url\":\"http://127.0.0.1:$port/gop10s-1080p.mp4?n=$i\",\"options\":{\"time\":9.5}}}"
  else
    body="{\"aps\":{\"alert\":\"p$i\",\"mutable-content\":1},\"image-url\":\"http://127.0.0.1:$port/photo.jpg?n=$i\"}"
  fi
  curl -s -o "$tmp/out.$i" -w "%{http_code}\n" -H "Attache-Deadline-Ms: 20000" --data-binary "$body" \
    "http://127.0.0.1:$sport/v1/enrich" > "$tmp/code.$i" &
  clients+=($!)
done
# SIGSEGV every helper, every 200 ms, for 4 s; /healthz asked all along.
( for _ in $(seq 20); do helpers | xargs -r kill -SEGV 2>/dev/null; sleep 0.2; done ) &
killer=$!
health_bad=0
for _ in $(seq 40); do
  code=$(curl -s -o /dev/null --max-time 2 -w "%{http_code}" "http://127.0.0.1:$sport/healthz")
  [ "$code" = 200 ] || health_bad=$((health_bad + 1))
  sleep 0.1
done
wait "$killer"
killer=
wait "${clients[@]}"
ok=$(cat "$tmp"/code.* 2>/dev/null | grep -c '^200$')
payloads=$(for i in $(seq $n); do python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert isinstance(d, dict) and "aps" in d' "$tmp/out.$i" 2>/dev/null && echo ok; done | wc -l)
crashed=$(grep -c 'decoder helper died on a job' "$tmp/serve.log")
check "every request got a 200 (got $ok of $n)" "[ $ok -eq $n ]"
check "each with a payload (got $payloads of $n)" "[ $payloads -eq $n ]"
check "/healthz stayed 200 ($health_bad other answers)" "[ $health_bad -eq 0 ]"
check "helpers died on jobs and were counted as crashes (got $crashed)" "[ $crashed -ge 1 ]"
check "the service is still running" "kill -0 $server"

# The pool recovers: back to 2 helpers, and a fresh photo is enriched.
for _ in $(seq 50); do [ "$(helpers | wc -l)" -eq 2 ] && break; sleep 0.1; done
check "back to 2 helpers (got $(helpers | wc -l))" "[ $(helpers | wc -l) -eq 2 ]"
outcome=$(curl -s -o "$tmp/after" -D - --data-binary "{\"aps\":{\"alert\":\"after\",\"mutable-content\":1},\"image-url\":\"http://127.0.0.1:$port/photo.jpg?after=1\"}" \
  "http://127.0.0.1:$sport/v1/enrich" | tr -d '\r' | sed -n 's/^[Aa]ttache-[Oo]utcome: //p')
check "after the killing a photo is enriched (got '$outcome')" "[ '$outcome' = enriched ]"

# Heavy work never holds every helper: 24 movies decoded 300 frames forward (0.7 s each in a
# release build here: 8 s of both helpers, were they free to take them), queued first, then 16 photos with a 5 s
# deadline: every photo is enriched in time, on the helper movies may not take. (With one queue
# in arrival order, the photos waited behind the movies and fell back.)
mix=()
for i in $(seq 24); do
  curl -s -o /dev/null -H "Attache-Deadline-Ms: 25000" --data-binary \
    "{\"aps\":{\"alert\":\"h$i\",\"mutable-content\":1},\"com.urbanairship.media_attachment\":{\"url\":\"http://127.0.0.1:$port/gop10s-1080p.mp4?mix=$i\",\"options\":{\"time\":9.5}}}" \
    "http://127.0.0.1:$sport/v1/enrich" &
  mix+=($!)
done
sleep 1.5  # the movies are fetched and queued first
for i in $(seq 16); do
  curl -s -o /dev/null -D - -H "Attache-Deadline-Ms: 5000" --data-binary \
    "{\"aps\":{\"alert\":\"s$i\",\"mutable-content\":1},\"image-url\":\"http://127.0.0.1:$port/photo.jpg?mix=$i\"}" \
    "http://127.0.0.1:$sport/v1/enrich" | tr -d '\r' | sed -n 's/^[Aa]ttache-[Oo]utcome: //p' > "$tmp/mix.$i" &
  mix+=($!)
done
wait "${mix[@]}"
check "with 24 heavy movies in the helpers, all 16 photos were enriched within 5 s ($(cat "$tmp"/mix.* | sort | uniq -c | tr '\n' ' '))" \
  "[ \$(grep -lx enriched $tmp/mix.* | wc -l) -eq 16 ]"
finish sandbox
