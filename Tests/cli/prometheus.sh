#!/usr/bin/env bash
# deploy/prometheus against the real thing: the rules pass promtool's check and unit tests; every
# metric and label they name is one a live service (with tenants), relay and worker export; and a
# real Prometheus server (Debian's, make test-deps) scrapes `attache serve` with its token,
# evaluates the rules without an error, and reads the service's counters back.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/nats.sh"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
rules=deploy/prometheus/attache-rules.yml
command -v promtool > /dev/null && command -v prometheus > /dev/null || { echo "FAIL: no prometheus/promtool: run make test-deps"; exit 1; }

check "promtool check rules" "promtool check rules $rules > $tmp/check.out 2>&1"
check "promtool test rules: each alert fires on its series and not on a healthy one" \
  "(cd deploy/prometheus && promtool test rules attache-rules-test.yml) > $tmp/test.out 2>&1"
[ -s "$tmp/test.out" ] && grep -q FAILED "$tmp/test.out" && head -30 "$tmp/test.out"

# The service, with a tenants file (a tenant past its rate is refused) and a token for /metrics.
start_origin; pids+=("$origin")
hash() { printf '%s' "$1" | "$bin" tenants token --hash; }
cat > "$tmp/tenants.yaml" <<YAML
tenants:
  acme:
    tokens: ["$(hash acme-token)"]
    hosts: ["127.0.0.1"]
  beta:
    tokens: ["$(hash beta-token)"]
    hosts: ["127.0.0.1"]
    rate: {per-second: 0.01, burst: 1}
YAML
sport=$(free_port)
ATTACHE_TOKENS=operator-token "$bin" serve --port "$sport" --allow-address 127.0.0.1/32 --media-dir "$tmp/media" \
  --tenants-file "$tmp/tenants.yaml" > "$tmp/serve.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$sport/healthz" && break; sleep 0.1; done
enrich() {  # token, media path, extra curl options...
  local token=$1 media=$2
  shift 2
  curl -s -o /dev/null -w '%{http_code}\n' -H "Authorization: Bearer $token" "$@" "http://127.0.0.1:$sport/v1/enrich" \
    --data-binary "{\"aps\":{\"alert\":\"x\",\"mutable-content\":1},\"image-url\":\"http://127.0.0.1:$port/$media\"}"
}
for i in 1 2 3; do enrich acme-token "photo.jpg?n=$i"; done > "$tmp/codes"
enrich acme-token "photo.jpg?delay=3000" -H 'Attache-Deadline-Ms: 300' >> "$tmp/codes"  # a timeout
enrich beta-token photo.jpg >> "$tmp/codes"
enrich beta-token photo.jpg >> "$tmp/codes"  # past beta's rate
check "the service answered (200 ×5, 429 for the tenant past its rate: $(tr '\n' ' ' < "$tmp/codes"))" \
  "[ \"\$(tr '\n' ' ' < $tmp/codes)\" = '200 200 200 200 200 429 ' ]"
curl -s -H 'Authorization: Bearer operator-token' "http://127.0.0.1:$sport/metrics" > "$tmp/serve.metrics"

# The relay, its upstream a closed port (it answers 503 and counts it), and the worker.
rport=$(free_port) rmetrics=$(free_port)
"$bin" relay --port "$rport" --metrics-port "$rmetrics" --apns-upstream "http://127.0.0.1:$(free_port)" \
  --media-dir "$tmp/relay-media" > "$tmp/relay.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q listening "$tmp/relay.log" 2>/dev/null && break; sleep 0.05; done
curl -s -o /dev/null --http2-prior-knowledge -H 'apns-topic: com.example.app' \
  --data-binary '{"aps":{"alert":"x"}}' "http://127.0.0.1:$rport/3/device/abc"
curl -s "http://127.0.0.1:$rmetrics/metrics" > "$tmp/relay.metrics"
start_nats "$tmp" || { echo "FAIL: no nats-server"; exit 1; }
pids+=("$nats_pid")
wmetrics=$(free_port)
"$bin" worker --nats "$nats" --metrics-port "$wmetrics" --media-dir "$tmp/worker-media" > "$tmp/worker.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do curl -s -o "$tmp/worker.metrics" "http://127.0.0.1:$wmetrics/metrics" && grep -q attache_queue "$tmp/worker.metrics" && break; sleep 0.1; done

dashboard=deploy/grafana/attache.json
names=$(python3 Tests/cli/prometheus-names.py "$tmp/serve.metrics" "$tmp/relay.metrics" "$tmp/worker.metrics" -- "$rules" "$dashboard" 2>&1)
check "every metric and label the rules and the dashboard name is exported ($names)" \
  "python3 Tests/cli/prometheus-names.py $tmp/serve.metrics $tmp/relay.metrics $tmp/worker.metrics -- $rules $dashboard > /dev/null"

# The real Prometheus server scrapes the service every second and evaluates the rules.
pport=$(free_port)
cat > "$tmp/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: ["$PWD/$rules"]
scrape_configs:
  - job_name: attache
    authorization: {credentials: operator-token}
    static_configs: [{targets: ["127.0.0.1:$sport"]}]
YAML
prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/tsdb" \
  --web.listen-address="127.0.0.1:$pport" > "$tmp/prometheus.log" 2>&1 &
pids+=($!)
query() { curl -s "http://127.0.0.1:$pport/api/v1/query" --data-urlencode "query=$1"; }
value() { python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")'; }
# Two scrapes and an evaluation make the recording rule's first value (a minute at most, even on
# a loaded machine).
for _ in $(seq 300); do
  [ -n "$(query 'attache:requests:rate5m' | value 2>/dev/null)" ] && break
  sleep 0.2
done
check "Prometheus scraped the service (up = $(query 'up{job="attache"}' | value))" "[ \"\$(query 'up{job=\"attache\"}' | value)\" = 1 ]"
enriched=$(query 'sum(attache_requests_total{outcome="enriched"})' | value)
check "… and reads its counters back: 4 enriched (got $enriched)" "[ '$enriched' = 4 ]"
timeouts=$(query 'sum(attache_requests_total{reason="timeout"})' | value)
check "… 1 timed out (got $timeouts)" "[ '$timeouts' = 1 ]"
check "… a tenant refused by its rate" "[ \"\$(query 'sum(attache_tenant_refused_total{tenant=\"beta\",limit=\"rate-limited\"})' | value)\" = 1 ]"
check "… the payload-time histogram has a bucket at the service's 3 s deadline" \
  "[ -n \"\$(query 'attache_stage_duration_seconds_bucket{stage=\"total\",le=\"3.0\"}' | value)\" ]"
check "… the decoder helpers' deaths, by cause, exported at 0 before the first" \
  "[ \"\$(query 'count(attache_decoder_crashes_total == 0)' | value)\" = 3 ]"
check "… the recording rules evaluate (attache:requests:rate5m has a value)" "[ -n \"\$(query 'attache:requests:rate5m' | value)\" ]"
curl -s "http://127.0.0.1:$pport/api/v1/rules" > "$tmp/rules.json"
health=$(python3 -c 'import json,sys; rs=[r for g in json.load(open(sys.argv[1]))["data"]["groups"] for r in g["rules"]]; print(len(rs), sum(r["health"]=="ok" for r in rs))' "$tmp/rules.json")
check "every rule evaluates without an error (rules, ok: $health)" "[ \"\$(echo $health | cut -d' ' -f1)\" = \"\$(echo $health | cut -d' ' -f2)\" ] && [ \"\$(echo $health | cut -d' ' -f1)\" -gt 10 ]"
# Each of the dashboard's queries, its variables given values, is one Prometheus accepts.
python3 Tests/cli/prometheus-names.py --accepted-by "http://127.0.0.1:$pport" "$dashboard" > "$tmp/dashboard.out"
check "Prometheus accepts every query of the dashboard ($(tail -1 "$tmp/dashboard.out"))" "grep -q '^bad 0$' $tmp/dashboard.out"
finish prometheus
