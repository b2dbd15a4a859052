#!/usr/bin/env bash
# The HTTP contract, docs/openapi.yaml: valid OpenAPI (openapi-spec-validator), and the running
# `attache serve` answers as it says. schemathesis generates requests for every operation of the
# service and its probes from the contract, valid and invalid (bodies, headers, methods the paths
# do not have), with a fixed seed and a bounded number of examples so a run is repeatable and
# short; every answer must conform: a documented status with its documented body and headers, no
# 5xx. The service runs with a tenants file and its token, as a deployment does; the tenant's only
# media host is 127.0.0.1, so no generated URL is looked up or fetched. Afterwards it is still
# healthy. Then the relay's two send paths, over HTTP/1.1 in clear text, in front of the APNs and
# FCM double of providers.py: the relay forwards what it does not answer itself and passes the
# upstream's answer back, so whether an invalid notification is refused is the upstream's call
# (Apple's, Google's; the double takes anything): that one check is left out there. Traffic stays
# on 127.0.0.1.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
tools=.build/tools/bin
server= relay= upstream=
cleanup() {
  for pid in $server $relay $upstream; do kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
for tool in openapi-spec-validator st; do
  [ -x "$tools/$tool" ] || { echo "FAIL: no $tools/$tool: run make test-deps"; exit 1; }
done

"$tools/openapi-spec-validator" docs/openapi.yaml > "$tmp/validator.out" 2>&1
check "docs/openapi.yaml is valid OpenAPI ($(tail -1 "$tmp/validator.out"))" "grep -q OK $tmp/validator.out"

token=contract-token
cat > "$tmp/tenants.yaml" <<YAML
tenants:
  contract:
    tokens: ["$(printf '%s' "$token" | "$bin" tenants token --hash)"]
    hosts: ["127.0.0.1"]
YAML
sport=$(free_port)
# The service's token (for /metrics) is the tenant's (for /v1/enrich): the one Authorization
# header schemathesis sends opens every operation, and its missing or wrong ones are refused.
"$bin" serve --port "$sport" --tenants-file "$tmp/tenants.yaml" --token "$token" --media-dir "$tmp/media" \
  > "$tmp/serve.log" 2>&1 &
server=$!
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$sport/healthz" && break; sleep 0.1; done

# schemathesis against the operations of the given tags at `url`, and a check that every answer
# conformed (the failures printed when not). It writes its cache and reports beside where it
# runs: in the temp dir.
fuzz() {  # what url out [st options...]
  (cd "$tmp" && "$OLDPWD/$tools/st" run "$OLDPWD/docs/openapi.yaml" --url "$2" --max-examples 30 --seed 1 --no-color "${@:4}") > "$3" 2>&1
  local code=$?
  check "schemathesis: every answer of the live $1 conforms ($(grep -E "^ *[0-9]+ generated" "$3" | tr -s ' ' | head -1))" "[ $code = 0 ]"
  [ "$code" = 0 ] || sed -n '/FAILURES/,$p' "$3" | head -60
}
curl -s -D "$tmp/openapi.headers" -o "$tmp/openapi.yaml" "http://127.0.0.1:$sport/openapi.yaml"
check "the service serves this contract at /openapi.yaml, without a token, byte for byte" "cmp -s docs/openapi.yaml $tmp/openapi.yaml"
check "… as application/yaml" "grep -qi '^content-type: application/yaml' $tmp/openapi.headers"
fuzz service "http://127.0.0.1:$sport" "$tmp/st.out" --include-tag service --include-tag probes -H "Authorization: Bearer $token"
check "schemathesis got past authentication everywhere" "! grep -q 'Authentication failed' $tmp/st.out"
check "the service is healthy after it" "curl -sf -o /dev/null http://127.0.0.1:$sport/healthz"
check "and never answered 5xx (its log)" "! grep -q '\"status\":5' $tmp/serve.log"
uport=$(free_port)
"$tools/python" Tests/cli/providers.py upstream "$uport" "$tmp/upstream.jsonl" > "$tmp/upstream.log" 2>&1 &
upstream=$!
rport=$(free_port)
for _ in $(seq 100); do grep -q listening "$tmp/upstream.log" 2>/dev/null && break; sleep 0.05; done
"$bin" relay --port "$rport" --apns-upstream "http://127.0.0.1:$uport" --fcm-upstream "http://127.0.0.1:$uport" \
  --media-dir "$tmp/relay-media" > "$tmp/relay.log" 2>&1 &
relay=$!
for _ in $(seq 100); do grep -q listening "$tmp/relay.log" 2>/dev/null && break; sleep 0.05; done
fuzz relay "http://127.0.0.1:$rport" "$tmp/st-relay.out" --include-tag relay --exclude-checks negative_data_rejection \
  -H "authorization: bearer eyJhbGciOiJFUzI1NiJ9.e30.c2ln"
after=$(curl -s -o /dev/null -w '%{http_code}' -H "authorization: bearer eyJhbGciOiJFUzI1NiJ9.e30.c2ln" -d '{"aps":{}}' \
  "http://127.0.0.1:$rport/3/device/abc")
check "the relay still forwards after it (got $after)" "[ $after = 200 ]"
finish contract
