#!/usr/bin/env bash
# attache lab: its command line, then the page driven in headless Chromium (Tests/browser/lab.py).
# LAB_SCREENSHOT=path also saves a screenshot of the page after a run (docs/lab.png is one).
set -euo pipefail
BIN=${1:-.build/debug/attache}
cd "$(dirname "$0")/../.."
PYTHON=.build/tools/bin/python3
work=$(mktemp -d)
lab_pid=
cleanup() {
    [ -n "$lab_pid" ] && kill "$lab_pid" 2>/dev/null && wait "$lab_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
pass=0
ok() { pass=$((pass + 1)); echo "ok - $*"; }
fail() { echo "FAIL - $*" >&2; exit 1; }
# start_lab LOG OPTIONS...: attache lab in the background; sets $lab_pid, and $url to where it
# says it listens (empty when it said nothing within 10 s).
start_lab() {
    local log=$1
    shift
    "$BIN" lab "$@" >"$log" 2>&1 &
    lab_pid=$!
    url=""
    for _ in $(seq 1 100); do
        url=$(sed -n 's/^attache lab: \(http:[^ ]*\)$/\1/p' "$log")
        [ -n "$url" ] && break
        sleep 0.1
    done
}

"$BIN" lab --help >"$work/help"
grep -q -- "--open" "$work/help" || fail "attache lab --help lists --open"
grep -q -- "--store\|--public-base-url\|--media-dir" "$work/help" && fail "attache lab --help lists store options it does not use"
grep -q "(default: 0)" "$work/help" && grep -q "default 0" "$work/help" && fail "attache lab --help says a default twice"
grep -q "^USAGE: attache lab \[<options>\]$" "$work/help" || fail "the usage line says the options are optional: $(grep USAGE "$work/help")"
ok "attache lab --help"
if "$BIN" lab --host 0.0.0.0 >"$work/out" 2>&1; then fail "the lab started on 0.0.0.0 without a token"; fi
grep -q "not a loopback address" "$work/out" || fail "a non-loopback host without a token is refused with a reason: $(cat "$work/out")"
ok "beyond loopback the lab wants a token"

# Work directories of labs that ran before this one (another checkout's, a killed one's) are not its.
ls -d /tmp/attache-lab-* > "$work/other-lab-dirs" 2>/dev/null || true
start_lab "$work/lab.log" --samples Samples
[ -n "$url" ] || fail "the lab printed no URL: $(cat "$work/lab.log")"
ok "the lab prints where it listens: $url"
case "$url" in http://127.0.0.1:*) ok "on loopback by default" ;; *) fail "not on loopback: $url" ;; esac
# Into a file, not a pipe: grep -q stops reading at the title, and curl, still writing the rest of
# the page, would fail with a broken pipe that pipefail turns into a failed check.
curl -sf "$url" -o "$work/page.html" || fail "the page is served"
grep -q "<title>Attache lab</title>" "$work/page.html" || fail "the page is the lab's: $(head -c 300 "$work/page.html")"
ok "the page is served from the binary"

# Other sites kept out: a rebound Host, a foreign Origin, a form-like text/plain POST.
url=${url%/}
port=${url##*:}
port=${port%%/*}
status() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
run_body='{"payload":"{\"aps\":{\"alert\":\"x\"}}","deadline_ms":1000,"profile":"none"}'
[ "$(status -H "Host: evil.example:$port" "$url/api/setup")" = 421 ] || fail "a rebound Host is refused (421)"
[ "$(status -H "Host: evil.example:$port" "$url/")" = 421 ] || fail "… on the page too"
[ "$(status -H "Host: localhost:$port" "$url/api/setup")" = 200 ] || fail "localhost:PORT is the lab"
[ "$(status -H "Host: evil.example:$port" -H "Origin: http://evil.example" -H "Content-Type: text/plain" --data-binary "$run_body" "$url/api/run")" = 421 ] \
  || fail "the issue's request (Host and Origin of another site, text/plain) is refused"
[ "$(status -H "Origin: http://evil.example" -H "Content-Type: application/json" --data-binary "$run_body" "$url/api/run")" = 403 ] \
  || fail "a POST from another origin is refused (403)"
[ "$(status -H "Sec-Fetch-Site: cross-site" "$url/api/setup")" = 403 ] || fail "a cross-site read of the setup is refused (403)"
[ "$(status --path-as-is -H "Sec-Fetch-Site: cross-site" "$url//api/setup")" = 403 ] || fail "… also spelt //api/setup"
[ "$(status -H "Content-Type: text/plain" --data-binary "$run_body" "$url/api/run")" = 415 ] || fail "a text/plain POST is refused (415)"
[ "$(status -H "Origin: $url" -H "Sec-Fetch-Site: same-origin" -H "Content-Type: application/json" --data-binary '{"payload":"{}"}' "$url/api/check")" = 204 ] \
  || fail "the lab's own page's request is answered"
ok "other sites' requests are refused: rebound Host 421, foreign Origin 403, text/plain 415"

"$PYTHON" Tests/browser/lab.py "$url/" ${LAB_SCREENSHOT:+"$LAB_SCREENSHOT"}
ok "the browser checks"
"$PYTHON" Tests/browser/other-site.py "$url/"
ok "other sites' pages in the browser get nothing from the lab"

# What the lab made goes with it: on SIGTERM, and when it cannot listen (the port in use).
ls -d /tmp/attache-lab-* 2>/dev/null | grep -v -x -F -f "$work/other-lab-dirs" > "$work/lab-dirs" || true
[ -s "$work/lab-dirs" ] || fail "the running lab has a work directory under /tmp"
kill -TERM "$lab_pid"; wait "$lab_pid" 2>/dev/null || true
lab_pid=
for d in $(cat "$work/lab-dirs"); do [ -e "$d" ] && fail "SIGTERM left $d behind"; done
ok "SIGTERM removes the lab's work directory"
busy=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 -c 'import socket,sys,time; s=socket.socket(); s.bind(("127.0.0.1",int(sys.argv[1]))); s.listen(); time.sleep(30)' "$busy" &
holder=$!
sleep 0.3
lab_dirs() { find /tmp -maxdepth 1 -name 'attache-lab-*' | wc -l; }
before=$(lab_dirs)
if "$BIN" lab --port "$busy" >"$work/busy.out" 2>&1; then kill "$holder"; fail "the lab started on a port in use"; fi
kill "$holder" 2>/dev/null
grep -q "attache lab: cannot listen on 127.0.0.1:$busy" "$work/busy.out" || fail "a port in use is named: $(cat "$work/busy.out")"
[ "$(lab_dirs)" = "$before" ] || fail "a failed start left its work directory"
ok "a port in use is said with its address, and leaves nothing behind"
# --max-deadline bounds a run's deadline as it bounds a service request's; the page is told it,
# and starts at --deadline.
start_lab "$work/short.log" --samples Samples --deadline 1500ms --max-deadline 2s
[ -n "$url" ] || fail "the lab with --max-deadline printed no URL: $(cat "$work/short.log")"
short=${url%/}
curl -sf "$short/api/setup" > "$work/setup.json" || fail "the lab with --max-deadline answers /api/setup"
grep -q '"max_deadline_ms":2000' "$work/setup.json" || fail "the page is told the longest deadline, --max-deadline 2s: $(cat "$work/setup.json")"
grep -q '"deadline_ms":1500' "$work/setup.json" || fail "the page is told the deadline to start at, --deadline 1500ms"
run() {  # DEADLINE_MS: a run's status
    printf '{"payload":"{\\"aps\\":{\\"alert\\":\\"x\\"}}","deadline_ms":%s,"profile":"none"}' "$1" > "$work/run.json"
    status -H "Content-Type: application/json" --data-binary @"$work/run.json" "$short/api/run"
}
[ "$(run 2001)" = 400 ] || fail "a run asking for more than --max-deadline is refused (400)"
[ "$(run 2000)" = 200 ] || fail "a run within --max-deadline runs"
kill -TERM "$lab_pid"; wait "$lab_pid" 2>/dev/null || true
lab_pid=
ok "--deadline 1500ms --max-deadline 2s: the page starts at 1500 ms, a run of 2001 ms is refused, one of 2000 ms runs"
echo "# lab.sh: $pass passed"
