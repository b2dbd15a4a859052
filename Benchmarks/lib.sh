# Shared by the benchmark scripts (sourced after they cd to the repository).

# setting NAME FULL QUICK: a benchmark's knob (runs, requests, a phase's length): $NAME when it is
# set, else QUICK with QUICK=1 in the environment (a quick look, for a change in progress: fewer
# runs, shorter phases, so wider spread; `make bench` alone writes docs/benchmarks.md, from full
# runs), else FULL.
setting() {
  local name=$1
  if [ -n "${!name:-}" ]; then echo "${!name}"; elif [ -n "${QUICK:-}" ]; then echo "$3"; else echo "$2"; fi
}

# A TCP port free on 127.0.0.1 now.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

# start_origin ROOT LOG: `$bin origin` serving ROOT on a free port, once it listens; sets
# $port and $origin (its pid).
start_origin() {
  port=$(free_port)
  "$bin" origin --root "$1" --port "$port" > "$2" 2>&1 &
  origin=$!
  for _ in $(seq 50); do grep -q listening "$2" 2>/dev/null && break; sleep 0.1; done
}
