#!/usr/bin/env bash
# attache serve with a tenants file: each tenant's token, hosts, store prefix, cache and limits;
# a tenant at its rate limit does not hold the other back; the file re-read under load without a
# failed request; a bad version refused at start (line and key) and, on reload, left out with the
# version before in force.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
python=.build/tools/bin/python3
[ -x "$python" ] || python=python3
server=
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  [ -n "${origin:-}" ] && kill "$origin" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
# Python's server as the origin: its log counts the fetches.
port=$(free_port)
python3 -m http.server --bind 127.0.0.1 "$port" --directory Samples/media > "$tmp/origin.log" 2>&1 &
origin=$!
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
hash() { printf '%s' "$1" | "$bin" tenants token --hash; }
write_tenants() {  # the tenants, with beta's token given as $1
  cat > "$tmp/tenants.next" <<YAML
tenants:
  acme:
    tokens: ["$(hash acme-token)"]
    hosts: ["127.0.0.1"]
    concurrency: 400
  beta:
    tokens: ["$(hash "$1")"]
    hosts: ["localhost"]
    rate: {per-second: 2, burst: 2}
  gamma:
    tokens: ["$(hash gamma-token)"]
    hosts: ["127.0.0.1"]
    cache-group: brands
  delta:
    tokens: ["$(hash delta-token)"]
    hosts: ["127.0.0.1"]
    cache-group: brands
  epsilon:
    tokens: ["$(hash epsilon-token)"]
    hosts: ["127.0.0.1"]
    daily-download-bytes: 200KB
YAML
  mv "$tmp/tenants.next" "$tmp/tenants.yaml"  # a rename: the reader sees one version or the other
}
write_tenants beta-token

# A bad file stops the start, naming the line and the key.
printf 'tenants:\n  acme:\n    tokens: ["%s"]\n    hostz: [a.example]\n' "$(hash acme-token)" > "$tmp/bad.yaml"
"$bin" serve --port 0 --tenants-file "$tmp/bad.yaml" --media-dir "$tmp/m0" > "$tmp/bad.out" 2>&1
check "a tenants file with an unknown key stops the start" "[ $? -ne 0 ]"
check "… naming its line and key" "grep -q 'line 4: tenants.acme.hostz: unknown key' '$tmp/bad.out'"

sport=$(free_port)
"$bin" serve --port "$sport" --tenants-file "$tmp/tenants.yaml" --media-dir "$tmp/media" \
  --allow-address 127.0.0.0/8 --allow-address ::1/128 --public-base-url "http://127.0.0.1:$sport/media" \
  --token operator-token > "$tmp/serve.log" 2>&1 &
server=$!
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$sport/healthz" && break; sleep 0.05; done
enrich() {  # token, media URL → the answer's body; its status in $tmp/status
  curl -s -o "$tmp/answer" -w '%{http_code}' -H "Authorization: Bearer $1" \
    -d "{\"aps\":{\"alert\":\"hi\",\"mutable-content\":1},\"media-url\":\"$2\"}" "http://127.0.0.1:$sport/v1/enrich" > "$tmp/status"
  cat "$tmp/answer"
}
url() { "$python" -c 'import json,sys; a=json.load(open(sys.argv[1])).get("attachments",[]); print(a[0]["url"] if a else "")' "$tmp/answer"; }
outcome() { curl -s -D - -o /dev/null -H "Authorization: Bearer $1" \
  -d "{\"aps\":{\"alert\":\"hi\",\"mutable-content\":1},\"media-url\":\"$2\"}" "http://127.0.0.1:$sport/v1/enrich" | tr -d '\r' | sed -n 's/^Attache-Outcome: //Ip'; }

# Tokens: each tenant's opens /v1/enrich; none, another, or the operator's do not.
enrich acme-token "http://127.0.0.1:$port/photo.jpg" > /dev/null
check "acme's token is accepted" "[ \$(cat $tmp/status) = 200 ]"
acme_url=$(url)
check "acme's copy is under its prefix (got $acme_url)" "[[ '$acme_url' == http://127.0.0.1:$sport/media/acme/*.jpg ]]"
check "… and served from there" "[ \$(curl -s -o /dev/null -w '%{http_code}' '$acme_url') = 200 ]"
check "… stored in the tenant's directory" "[ -n \"\$(ls $tmp/media/acme/*.jpg 2>/dev/null)\" ]"
for t in "" nobody-token operator-token; do
  enrich "$t" "http://127.0.0.1:$port/photo.jpg" > /dev/null
  check "token '$t' is refused on /v1/enrich" "[ \$(cat $tmp/status) = 401 ]"
done
check "the operator's token opens /metrics" "[ \$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer operator-token' http://127.0.0.1:$sport/metrics) = 200 ]"
check "a tenant's does not" "[ \$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer acme-token' http://127.0.0.1:$sport/metrics) = 401 ]"

# Hosts: each tenant is refused the other's.
check "acme may not fetch from localhost" "[[ '$(outcome acme-token "http://localhost:$port/photo.jpg")' == *host-not-allowed* ]]"
sleep 0.6  # beta's rate: 2 a second
check "beta may not fetch from 127.0.0.1" "[[ '$(outcome beta-token "http://127.0.0.1:$port/photo.jpg")' == *host-not-allowed* ]]"
sleep 0.6
enrich beta-token "http://localhost:$port/photo.jpg" > /dev/null
beta_url=$(url)
check "beta's copy is under its own prefix (got $beta_url)" "[[ '$beta_url' == http://127.0.0.1:$sport/media/beta/*.jpg ]]"

# Cache: acme's result is not gamma's; gamma's is delta's, their file says they share.
gets=$(grep -c 'GET /photo.jpg' "$tmp/origin.log")
enrich gamma-token "http://127.0.0.1:$port/photo.jpg" > /dev/null
gamma_url=$(url)
check "gamma gets its own copy, not acme's cached one (got $gamma_url)" "[[ '$gamma_url' == http://127.0.0.1:$sport/media/gamma/*.jpg ]]"
check "… fetched for it" "[ \$(grep -c 'GET /photo.jpg' $tmp/origin.log) -eq $((gets + 1)) ]"
enrich delta-token "http://127.0.0.1:$port/photo.jpg" > /dev/null
check "delta, in gamma's cache group, gets gamma's result" "[ '$(url)' = '$gamma_url' ]"
check "… without a fetch" "[ \$(grep -c 'GET /photo.jpg' $tmp/origin.log) -eq $((gets + 1)) ]"

# Rate: beta floods 40 at once past its 2 a second; acme's 40 at the same time all go through.
"$python" - "$sport" > "$tmp/flood.txt" <<'PY'
import sys, threading, urllib.request, urllib.error
port = int(sys.argv[1])
counts = {}
def send(token):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/enrich", data=b'{"aps":{"alert":"hi"}}',
                                 headers={"Authorization": "Bearer " + token})
    try:
        code, retry = urllib.request.urlopen(req, timeout=10).status, None
    except urllib.error.HTTPError as e:
        code, retry = e.code, e.headers.get("Retry-After")
    key = (token, code, retry)
    counts[key] = counts.get(key, 0) + 1
threads = [threading.Thread(target=send, args=(t,)) for _ in range(40) for t in ("beta-token", "acme-token")]
[t.start() for t in threads]; [t.join() for t in threads]
for (token, code, retry), n in sorted(counts.items(), key=str):
    print(token, code, retry, n)
PY
check "beta past its rate is answered 429 with Retry-After" "grep -q '^beta-token 429 1 ' $tmp/flood.txt"
check "… at most its burst went through" "[ \$(awk '\$1 == \"beta-token\" && \$2 == 200 {s += \$4} END {print s+0}' $tmp/flood.txt) -le 2 ]"
check "acme's 40 all went through meanwhile" "grep -q '^acme-token 200 None 40$' $tmp/flood.txt"

# Quota: 12 of epsilon's payloads at once, each a 140 KB photo of its own, against 200 KB a day.
# Each transfer claims its bytes as they arrive: together they keep no more than the quota, the
# ones it ran out under end quota-exceeded, and the next day's admission is refused (429).
quota_pids=()
for i in $(seq 12); do
  curl -s -D - -o /dev/null -H "Authorization: Bearer epsilon-token" \
    -d "{\"aps\":{\"alert\":\"q$i\",\"mutable-content\":1},\"media-url\":\"http://127.0.0.1:$port/photo.jpg?quota=$i\"}" \
    "http://127.0.0.1:$sport/v1/enrich" | tr -d '\r' | sed -n 's/^Attache-Outcome: //Ip' > "$tmp/quota.$i" &
  quota_pids+=($!)
done
wait "${quota_pids[@]}"
claimed=$(curl -s -H 'Authorization: Bearer operator-token' "http://127.0.0.1:$sport/metrics" | sed -n 's/^attache_tenant_quota_bytes_total{tenant="epsilon"} //p')
check "12 parallel payloads kept no more than the 200 KB quota between them (claimed ${claimed:-none})" "[ -n '$claimed' ] && [ '$claimed' -le 200000 ]"
check "… at most one photo was enriched ($(grep -l '^enriched' "$tmp"/quota.* | wc -l))" "[ \$(grep -l '^enriched' $tmp/quota.* | wc -l) -le 1 ]"
check "… the others ran out: quota-exceeded ($(cat "$tmp"/quota.* | sort | uniq -c | tr '\n' ' '))" "[ \$(grep -l 'reason=quota-exceeded' $tmp/quota.* | wc -l) -ge 10 ]"

# Reload under load: 300 of acme's requests in flight at once (each a new image URL, so each is
# fetched and decoded) while beta's token is replaced; not one of acme's fails, the new token
# works within the reload interval, the old one is refused.
"$python" - "$sport" "$port" > "$tmp/reload.txt" 2>&1 <<'PY' &
import json, sys, threading, urllib.request, urllib.error
port, origin = int(sys.argv[1]), int(sys.argv[2])
failed, ok = [], [0]
def send(i):
    body = json.dumps({"aps": {"alert": "hi", "mutable-content": 1}, "media-url": f"http://127.0.0.1:{origin}/photo.jpg?n={i}"})
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/enrich", data=body.encode(),
                                 headers={"Authorization": "Bearer acme-token"})
    try:
        urllib.request.urlopen(req, timeout=20).read()
        ok[0] += 1
    except Exception as e:
        failed.append(str(e))
threads = [threading.Thread(target=send, args=(i,)) for i in range(300)]
[t.start() for t in threads]; [t.join() for t in threads]
print("failed", len(failed), "ok", ok[0], failed[:3])
PY
load=$!
# Rewritten once the requests are in flight (the service counts them).
in_flight=0
for _ in $(seq 200); do
  in_flight=$(curl -s -H 'Authorization: Bearer operator-token' "http://127.0.0.1:$sport/metrics" | sed -n 's/^attache_in_flight //p')
  [ "${in_flight%.*}" -ge 100 ] 2>/dev/null && break
  sleep 0.02
done
check "a hundred or more requests were in flight when the file was rewritten (saw $in_flight)" "[ '${in_flight%.*}' -ge 100 ]"
write_tenants beta-token-2
accepted=no
for _ in $(seq 50); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer beta-token-2' -d '{"aps":{}}' "http://127.0.0.1:$sport/v1/enrich")" = 200 ] && { accepted=yes; break; }
  sleep 0.1
done
wait $load
check "the new token is accepted within the reload interval" "[ $accepted = yes ]"
sleep 0.6
check "the removed token is refused" "[ \$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer beta-token' -d '{}' http://127.0.0.1:$sport/v1/enrich) = 401 ]"
check "no request of acme's failed during the reload ($(cat $tmp/reload.txt))" "grep -q '^failed 0 ok 300 ' $tmp/reload.txt"

# A bad version: logged, counted, and the version before stays in force.
printf 'tenants:\n  acme: [\n' > "$tmp/tenants.next" && mv "$tmp/tenants.next" "$tmp/tenants.yaml"
for _ in $(seq 50); do grep -q 'tenants file refused' "$tmp/serve.log" && break; sleep 0.1; done
check "a bad version is logged with its line" "grep 'tenants file refused' $tmp/serve.log | grep -q 'line 3'"
check "… and counted" "curl -s -H 'Authorization: Bearer operator-token' http://127.0.0.1:$sport/metrics | grep '^attache_tenants_reload_failures_total 1' >/dev/null"
check "… and the version before is in force" "[ \$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer acme-token' -d '{}' http://127.0.0.1:$sport/v1/enrich) = 200 ]"

# A version with no tenants (every request would be 401), then no file at all, a FIFO and a
# device in its place: each refused, logged once, counted, and the version before stays.
failures() { curl -s -H 'Authorization: Bearer operator-token' "http://127.0.0.1:$sport/metrics" | sed -n 's/^attache_tenants_reload_failures_total //p'; }
refused_version() {  # what it is, the log's words for it, the count after it
  for _ in $(seq 60); do [ "$(failures)" = "$3" ] && break; sleep 0.1; done
  check "$1: refused and counted (failures: $(failures), expected $3)" "[ '$(failures)' = $3 ]"
  check "$1: logged once" "[ \$(grep -c '$2' $tmp/serve.log) -eq 1 ]"
  check "$1: the version before is in force" "[ \$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer acme-token' -d '{}' http://127.0.0.1:$sport/v1/enrich) = 200 ]"
}
printf 'tenants: {}\n' > "$tmp/tenants.next" && mv "$tmp/tenants.next" "$tmp/tenants.yaml"
refused_version "an empty tenants file" "no tenants: every request would be refused" 2
rm "$tmp/tenants.yaml"
refused_version "the file deleted" "the file is gone" 3
mkfifo "$tmp/tenants.yaml"
refused_version "a FIFO in its place" "the file is a FIFO" 4
rm "$tmp/tenants.yaml" && ln -s /dev/zero "$tmp/tenants.yaml"
refused_version "/dev/zero in its place" "the file is a device" 5
rm "$tmp/tenants.yaml" && write_tenants beta-token-3
for _ in $(seq 60); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer beta-token-3' -d '{}' "http://127.0.0.1:$sport/v1/enrich")" = 200 ] && break
  sleep 0.1
done
check "a good version after them is read again" "[ \$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer beta-token-3' -d '{}' http://127.0.0.1:$sport/v1/enrich) = 200 ]"
printf 'tenants: {}\n' > "$tmp/empty.yaml"
"$bin" serve --port 0 --tenants-file "$tmp/empty.yaml" --media-dir "$tmp/m0" > "$tmp/empty.out" 2>&1
check "an empty tenants file stops the start, saying why" "[ $? -ne 0 ] && grep -q 'no tenants' $tmp/empty.out"

# Metrics carry the tenant.
curl -s -H 'Authorization: Bearer operator-token' "http://127.0.0.1:$sport/metrics" > "$tmp/metrics"
check "requests are counted per tenant" "grep -q 'attache_requests_total{.*tenant=\"acme\"' $tmp/metrics"
check "fetched bytes per tenant" "grep -q 'attache_fetched_bytes_total{tenant=\"gamma\"}' $tmp/metrics"
check "refusals per tenant and limit" "grep -q 'attache_tenant_refused_total{tenant=\"beta\",limit=\"rate-limited\"}' $tmp/metrics"
finish tenants
