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

# ticks PID: the CPU time (user and system, in ticks of 1/100 s) a process and its children (a
# proxy's workers, a service's decoder helpers) have spent so far.
ticks() {
  local total=0 pid
  for pid in "$1" $(pgrep -P "$1" || true); do total=$((total + $(awk '{print $14 + $15}' "/proc/$pid/stat"))); done
  echo "$total"
}

# start_origin ROOT LOG: `$bin origin` serving ROOT on a free port, once it listens; sets
# $port and $origin (its pid).
start_origin() {
  port=$(free_port)
  "$bin" origin --root "$1" --port "$port" > "$2" 2>&1 &
  origin=$!
  for _ in $(seq 50); do grep -q listening "$2" 2>/dev/null && break; sleep 0.1; done
}

# callgrind_copy: $work/attache-serve, what valgrind runs. Valgrind 3.19 cannot read the DWARF 5
# a Swift build writes: a copy without it (its symbols stay, so functions keep their names),
# beside the decoder helper it starts.
callgrind_copy() {
  objcopy --strip-debug "$(dirname "$bin")/attache-serve" "$work/attache-serve"
  cp "$(dirname "$bin")/attache-decode" "$work/"
}

# callgrind_count NAME PATH -- SERVER...: SERVER (`$listen` in its arguments stands for a free
# port) started under callgrind (counting off), warmed by 2,000 requests (traced, past its first
# export too), then $requests requests
# counted: h2load's, 8 connections, with the flags in the array `load` (the body, headers, `--h1`
# or streams per connection), to PATH. Prints instructions per request; the dump of the counted
# requests is $work/NAME.callgrind.1. The server's pid joins `pids`.
callgrind_count() {
  local name=$1 path=$2 listen pid out
  shift 3
  listen=$(free_port)
  out="$work/$name.callgrind"
  valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out" "${@//\$listen/$listen}" > "$work/$name.log" 2>&1 &
  pid=$!
  pids+=("$pid")
  # Any answer is an answer: a service's /healthz, the relay's 404, a proxy's upstream's.
  for _ in $(seq 600); do curl -s -o /dev/null "http://127.0.0.1:$listen/healthz" && break; sleep 0.1; done
  h2load -n 2000 -c 8 "${load[@]}" "http://127.0.0.1:$listen$path" > /dev/null 2>&1
  # A traced server exports its first batch at its first tick (OTEL_BSP_SCHEDULE_DELAY, in ms,
  # 5000 unset): that export connects to the collector once for the life of the process, and its
  # first use of NIO's HTTP client types costs millions of instructions; it is start-up, not a
  # request's cost.
  [ -z "${OTEL_EXPORTER_OTLP_ENDPOINT:-}" ] || sleep $(( ${OTEL_BSP_SCHEDULE_DELAY:-5000} / 1000 + 1 ))
  callgrind_control -i on "$pid" > /dev/null 2>&1
  h2load -n "$requests" -c 8 "${load[@]}" "http://127.0.0.1:$listen$path" > "$work/$name.h2load"
  callgrind_control -i off "$pid" > /dev/null 2>&1
  callgrind_control -d "$pid" > /dev/null 2>&1
  kill "$pid"; wait "$pid" 2>/dev/null || true
  grep -q "succeeded, 0 failed" "$work/$name.h2load" || { echo "$name: requests failed" >&2; tail -n 5 "$work/$name.h2load" "$work/$name.log" >&2; exit 1; }
  awk '/^totals:/ { total += $2 } END { print int(total / '"$requests"') }' "$out"*
}

# need_packages PACKAGE...: those of the Debian packages that are missing, installed with apt-get
# (through sudo when not root).
need_packages() {
  local missing="" p sudo_
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
  [ -n "$missing" ] || return 0
  sudo_=$([ "$(id -u)" = 0 ] || echo sudo)
  # shellcheck disable=SC2086 # the names are words
  $sudo_ apt-get update -qq && $sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing
}

# start_apns_upstream WORK: a test CA in WORK and nghttpd over TLS with it on a free port, answering
# POST /3/device/abc 200 from an empty file (an APNs double for the relay's benchmarks); sets $up
# (its port) and $upstream (its pid).
start_apns_upstream() {
  Tests/cli/test-ca.sh "$1" > /dev/null
  mkdir -p "$1/up/3/device" && : > "$1/up/3/device/abc"
  up=$(free_port)
  nghttpd -n 1 -d "$1/up" "$up" "$1/server.key" "$1/server.pem" > "$1/nghttpd.log" 2>&1 &
  upstream=$!
}

# start_span_sink LOG: Benchmarks/tools/otlp_sink.c (an OTLP/HTTP endpoint that answers at once
# and counts the spans as they arrive, keeping nothing), built beside LOG, on a free port, niced:
# it stands for a collector on another host, so it takes as little as it can of the cores the
# services are measured on. Sets $sink (its port) and $sink_pid, once it listens.
start_span_sink() {
  cc -O2 -o "$1.bin" Benchmarks/tools/otlp_sink.c
  sink=$(free_port)
  nice -n 19 "$1.bin" "$sink" > "$1" 2>&1 &
  sink_pid=$!
  for _ in $(seq 50); do grep -q listening "$1" 2>/dev/null && break; sleep 0.1; done
}

# stop_span_sink LOG: stops the sink, which writes what it received on its way out; sets $spans
# (the spans it counted).
stop_span_sink() {
  kill "$sink_pid"
  wait "$sink_pid" 2>/dev/null || true
  spans=$(sed -n 's/^received [0-9]* exports, \([0-9]*\) spans.*/\1/p' "$1")
  spans=${spans:-0}
}
