#!/usr/bin/env bash
# Two `attache serve` replicas sharing one S3 bucket on a real SeaweedFS (`make test-deps`), as
# behind a load balancer: the second enriches a URL the first did with no fetch from the origin,
# and with the same URLs; the payload's URL serves the validated bytes from the bucket; with the
# store stopped, a new URL is store-failed within the deadline (+ 1 s); /media is off.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/seaweedfs.sh"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT

# The store, with its bucket made before the replicas start, as a real one would be (readiness
# asks for it).
started=0; start_seaweedfs "$tmp/weed" media || started=$?
[ -n "${weed_pid:-}" ] && pids+=("$weed_pid")
[ "$started" = 0 ] || { echo "FAIL: SeaweedFS did not start with its bucket"; tail -n 20 "$tmp/weed/weed.log" 2>/dev/null; exit 1; }

# The origin: one that logs every request, to count fetches.
oport=$(free_port)
python3 -m http.server --bind 127.0.0.1 "$oport" --directory Samples/media > "$tmp/origin.log" 2>&1 &
pids+=($!)

start_replica() {  # name → $replica (its port); not called in $(…), so its pid reaches the trap
  local port
  port=$(free_port)
  AWS_ACCESS_KEY_ID=$key AWS_SECRET_ACCESS_KEY=$secret AWS_REGION=us-east-1 AWS_ENDPOINT_URL_S3=$s3 \
    "$bin" serve --port "$port" --store s3://media/push/ --media-dir "$tmp/$1" --allow-address 127.0.0.1/32 \
    --deadline 20s > "$tmp/$1.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz")" = 200 ] && break; sleep 0.2; done
  replica=$port
}
start_replica a; a=$replica
start_replica b; b=$replica
ready_a=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$a/readyz")
check "replica a is ready: the store answers (got $ready_a)" "[ $ready_a = 200 ]"

payload="{\"aps\":{\"alert\":\"r\",\"mutable-content\":1},\"image-url\":\"http://127.0.0.1:$oport/animated.gif\"}"
enrich() {  # port, payload, output → Attache-Outcome
  curl -s -D "$3.headers" -o "$3" --data-binary "$2" "http://127.0.0.1:$1/v1/enrich"
  grep -i '^attache-outcome' "$3.headers" | tr -d '\r' | cut -d' ' -f2-
}
fetches() { grep -c 'GET /animated.gif' "$tmp/origin.log"; }
outcome_a=$(enrich "$a" "$payload" "$tmp/out-a")
fetched_a=$(fetches)
outcome_b=$(enrich "$b" "$payload" "$tmp/out-b")
fetched_b=$(fetches)
check "replica a enriches (got $outcome_a)" "[ '$outcome_a' = enriched ]"
check "the origin was asked once (got $fetched_a)" "[ $fetched_a -eq 1 ]"
check "replica b enriches the same URL (got $outcome_b)" "[ '$outcome_b' = enriched ]"
check "replica b fetched nothing: it found a's result in the store (origin asked $fetched_b times)" "[ $fetched_b -eq 1 ]"
check "both answers carry the same URLs" "cmp -s $tmp/out-a $tmp/out-b"
url=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["attachments"][0]["url"])' "$tmp/out-a")
curl -s -o "$tmp/downloaded" -D "$tmp/downloaded.headers" "$url"
check "the payload's URL is in the bucket" "[[ '$url' == $s3/media/push/* ]]"
check "it serves the validated bytes (a GIF as it came)" "cmp -s Samples/media/animated.gif $tmp/downloaded"
check "with Content-Type and an immutable Cache-Control" "grep -qi '^content-type: image/gif' $tmp/downloaded.headers && grep -qi '^cache-control: public, max-age=31536000, immutable' $tmp/downloaded.headers"
media=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$a/media/x.jpg")
check "/media is off with an object store (got $media)" "[ $media = 404 ]"

# The store goes down: a URL nobody has stored is store-failed, in time, the original out.
kill "$weed_pid"; wait "$weed_pid" 2>/dev/null
fresh="{\"aps\":{\"alert\":\"r\",\"mutable-content\":1},\"image-url\":\"http://127.0.0.1:$oport/photo.jpg\"}"
started=$(date +%s%N)
curl -s -D "$tmp/down.headers" -o "$tmp/down" -H "Attache-Deadline-Ms: 3000" --data-binary "$fresh" "http://127.0.0.1:$b/v1/enrich"
elapsed=$(( ($(date +%s%N) - started) / 1000000 ))
check "a store that is down: store-failed" "grep -qi '^attache-outcome: fallback; reason=store-failed' $tmp/down.headers"
printf '%s' "$fresh" > "$tmp/fresh"
check "a store that is down: the original, byte for byte" "cmp -s $tmp/fresh $tmp/down"
check "a store that is down: answered by the deadline + 1 s (took $elapsed ms)" "[ $elapsed -lt 4000 ]"
ready_b=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$b/readyz")
check "a store that is down: not ready (got $ready_b)" "[ $ready_b = 503 ]"
finish replicas
