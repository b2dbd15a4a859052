# Shared by the scripts in Tests/cli: run from the repository root, count checks, pick ports.
cd "$(dirname "$0")/../.."
bin=${1:-.build/debug/attache}
tmp=$(mktemp -d)
passed=0 failed=0
check() {  # name, condition (evaluated)
  if eval "$2"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $1"; fi
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
# Starts the sample origin (Samples/media, faults per request) on a free loopback port and waits
# until it listens: sets $port and $origin (its pid; the caller's trap kills it).
start_origin() {
  port=$(free_port)
  "$bin" origin --root Samples/media --port "$port" > "$tmp/origin.log" 2>&1 &
  origin=$!
  for _ in $(seq 50); do grep -q listening "$tmp/origin.log" 2>/dev/null && break; sleep 0.1; done
}
# Prints "<name>: N passed, N failed" and exits non-zero when a check failed.
finish() {
  echo "$1: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
