# Sourced: `start_nats DIR` starts a real nats-server with JetStream (Debian's, `make test-deps`)
# on free loopback ports, its store in DIR, and waits until its monitoring port answers. Sets
# $nats (its URL), $nats_monitor (the monitoring port) and $nats_pid (the caller stops it).
# Returns 1 when there is no nats-server.
nats_server=${ATTACHE_NATS_SERVER:-/usr/sbin/nats-server}

start_nats() {  # dir
  local port
  [ -x "$nats_server" ] || { echo "no nats-server at $nats_server: run make test-deps" >&2; return 1; }
  port=$(free_port) nats_monitor=$(free_port)
  mkdir -p "$1"
  "$nats_server" -js -a 127.0.0.1 -p "$port" -m "$nats_monitor" -sd "$1/js" > "$1/nats.log" 2>&1 &
  nats_pid=$!
  nats=nats://127.0.0.1:$port
  for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$nats_monitor/healthz" && break; sleep 0.1; done
}
