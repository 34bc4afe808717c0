#!/usr/bin/env bash
# Load run: wrk posts recorded AMF bodies (an AMF0 echo and a Flex echo) to amfgate, and the
# same AMF0 body to bare Beast endpoints built in the same tree (the ceilings: asynchronous as
# amfgate's HTTP layer, and Beast's synchronous thread-per-connection server). amfgate runs
# with the access log off, and on as a user runs it (to stdout, and to a file sink): the
# last lines are what the access log costs, and the defaults against each ceiling. A second
# amfgate keeps its sessions in a redis-server of its own: the AMF0 echo without a session
# (requests hop to the worker threads) and with a session cookie (one GETEX per request).
# Rounds are interleaved and medians reported, since a shared machine drifts: requests/s,
# p50/p99 latency, server CPU per request (from /proc; amfgate's only, not Redis's), and each
# ratio to the ceiling's. The test daemon (tests/server/test_daemon.cpp, on its defaults with
# the access log on) answers the same echo alone (slow-quiet) and while 16 other connections
# keep calling a handler that blocks its worker for 200 ms (slow-busy). The defaults with 1
# I/O thread pinned to one core and with 2 pinned to two (taskset; a projection for 16 cores
# from CPU per request). The same defaults on a build with Asio on io_uring (AMFGATE_IO_URING,
# build/bench-uring: uring-amf0, uring-flex). System calls per request of both ceilings and of
# amfgate on the defaults, on epoll and io_uring (perf stat). Then 10,000 idle keep-alive
# connections held open beside the busy ones (idle_conns.cpp): throughput with and without
# them, the daemon's RSS. Last, server push:
# 1,000 long-polling and 1,000 streaming Flex consumers of one destination while a Producer
# publishes 20 messages a second (push_load.cpp), on the defaults plus the limits that so
# many connections from one address need, then each kind alone (2,000 streams at 40 a second,
# 1,000 long polls at 20), and the floor: the same connections and frame bytes written with
# no daemon (push_floor.cpp). Then the bridge: an AMF0 call that amfgate answers
# through a Flask backend under gunicorn (bridge_backend.py), against the same JSON posted to
# the backend straight, and amfgate's CPU per bridged call against its CPU per AMF0 echo, with
# the connections it opened to the backend. Loopback only; bounded in time.
# With AMFGATE_BASELINE set to another amfgate binary (the code before a change, built as
# build/bench is), it runs too, on the same defaults, in the same rounds: the before and after
# of a change in one run (base-amf0, base-flex, and their ratios).
#   [AMFGATE_BASELINE=/other/amfgate] tests/bench/load/run.sh [SECONDS_PER_RUN] [CONNECTIONS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../../.."
seconds=${1:-5}
connections=${2:-16}
rounds=${3:-3}
command -v wrk >/dev/null || { echo "load: wrk is missing (apt-get install wrk)" >&2; exit 1; }
command -v redis-server >/dev/null || { echo "load: redis-server is missing" >&2; exit 1; }
cmake -S . -B build/bench -DCMAKE_BUILD_TYPE=Release -DAMFGATE_TESTS=OFF >/dev/null
cmake --build build/bench -j"$(nproc)" --target amfgate amfdump bare_server amfgate_test_daemon \
  push_load push_floor idle_conns >/dev/null
# The same tree with Asio on io_uring (AMFGATE_IO_URING): the A/B of the transport.
cmake -S . -B build/bench-uring -DCMAKE_BUILD_TYPE=Release -DAMFGATE_TESTS=OFF \
  -DAMFGATE_BENCH=OFF -DAMFGATE_IO_URING=ON >/dev/null
cmake --build build/bench-uring -j"$(nproc)" --target amfgate >/dev/null

work=$(mktemp -d)
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
for r in amf0-echo flex-echo slow-block bridge-echo; do
  build/bench/codec/amfdump --encode --packet "tests/bench/load/$r.json" >"$work/$r.amf"
done
cat >"$work/amfgate.json" <<JSON
{"listen": {"address": "127.0.0.1", "port": 18481}, "threads": 2, "log": {"access": false}}
JSON
# The same daemon on the defaults a user runs: the access log on, to standard output (here a
# file, as a container runtime or journald collects it), and to a file sink.
cat >"$work/amfgate-log.json" <<JSON
{"listen": {"address": "127.0.0.1", "port": 18485}, "threads": 2}
JSON
sed 's/18485/18499/' "$work/amfgate-log.json" >"$work/amfgate-uring.json"
cat >"$work/amfgate-file.json" <<JSON
{"listen": {"address": "127.0.0.1", "port": 18486}, "threads": 2,
 "log": {"sinks": [{"type": "file", "path": "$work/access-file.log"}]}}
JSON
cat >"$work/amfgate-redis.json" <<JSON
{"listen": {"address": "127.0.0.1", "port": 18483}, "threads": 2, "log": {"access": false},
 "sessions": {"store": "redis", "redis": {"port": 18482}}}
JSON
# Threads that scale: the defaults with 1 I/O thread pinned to one core, and with 2 pinned to two.
for t in 1 2; do
  cat >"$work/amfgate-threads$t.json" <<JSON
{"listen": {"address": "127.0.0.1", "port": $((18490 + t))}, "threads": $t}
JSON
done
cat >"$work/test-daemon.json" <<JSON
{"listen": {"address": "127.0.0.1", "port": 18484}, "threads": 2}
JSON
redis-server --port 18482 --bind 127.0.0.1 --save "" --appendonly no --dir "$work" \
  >"$work/redis.log" & redis=$!
build/bench/tests/bench/bare_server 18480 2 & bare=$!
build/bench/tests/bench/bare_server 18487 2 --sync & bare_sync=$!
build/bench/server/amfgate --config "$work/amfgate.json" >"$work/amfgate.log" & gate=$!
sleep 0.5
build/bench/server/amfgate --config "$work/amfgate-redis.json" >"$work/amfgate-redis.log" &
gate_redis=$!
build/bench/tests/amfgate_test_daemon --config "$work/test-daemon.json" >"$work/test-daemon.log" &
slow=$!
build/bench/server/amfgate --config "$work/amfgate-log.json" >"$work/amfgate-stdout.log" &
gate_log=$!
build/bench/server/amfgate --config "$work/amfgate-file.json" >/dev/null &
gate_file=$!
build/bench-uring/server/amfgate --config "$work/amfgate-uring.json" >/dev/null &
gate_uring=$!
taskset -c 0 build/bench/server/amfgate --config "$work/amfgate-threads1.json" >/dev/null &
gate_t1=$!
taskset -c 0,1 build/bench/server/amfgate --config "$work/amfgate-threads2.json" >/dev/null &
gate_t2=$!
pids=("$bare" "$bare_sync" "$gate" "$gate_redis" "$redis" "$slow" "$gate_log" "$gate_file" "$gate_t1"
  "$gate_t2" "$gate_uring")
if [ -n "${AMFGATE_BASELINE:-}" ]; then
  sed 's/18485/18495/' "$work/amfgate-log.json" >"$work/amfgate-base.json"
  "$AMFGATE_BASELINE" --config "$work/amfgate-base.json" >"$work/amfgate-base.log" &
  gate_base=$!
  pids+=("$gate_base")
fi
sleep 1
session=0123456789abcdef0123456789abcdef
redis-cli -p 18482 SET "amfgate:session:$session" \
  '{"user":{"name":"bench","roles":[]},"dsid":"","small_messages":false}' PX 3600000 >/dev/null

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# wrk as every measured run drives a server: add the URL (and AMF_BODY in the environment).
post=(wrk -t1 -c"$connections" -d"${seconds}s" -s tests/bench/load/post.lua)
run() {  # run NAME PID URL BODY [COOKIE]: one line "NAME rps p50 p99 cpu_us errors"
  local t0 t1 line
  t0=$(cpu_ticks "$2")
  line=$(AMF_BODY=$4 AMF_COOKIE=${5:-} "${post[@]}" "$3" | grep '^RESULT')
  t1=$(cpu_ticks "$2")
  echo "$line" | awk -v n="$1" -v a="$t0" -v b="$t1" -v hz="$(getconf CLK_TCK)" '{
    for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
    printf "%s %s %s %s %.2f %s\n", n, v["rps"], v["p50_ms"], v["p99_ms"],
      (b - a) / hz * 1e6 / v["requests"], v["errors"] }'
}
for r in $(seq "$rounds"); do
  run ceiling "$bare" http://127.0.0.1:18480/ "$work/amf0-echo.amf"
  run sync-ceiling "$bare_sync" http://127.0.0.1:18487/ "$work/amf0-echo.amf"
  run amf0-echo "$gate" http://127.0.0.1:18481/gateway "$work/amf0-echo.amf"
  run flex-echo "$gate" http://127.0.0.1:18481/gateway "$work/flex-echo.amf"
  run amf0-log "$gate_log" http://127.0.0.1:18485/gateway "$work/amf0-echo.amf"
  run flex-log "$gate_log" http://127.0.0.1:18485/gateway "$work/flex-echo.amf"
  if [ -n "${AMFGATE_BASELINE:-}" ]; then
    run base-amf0 "$gate_base" http://127.0.0.1:18495/gateway "$work/amf0-echo.amf"
    run base-flex "$gate_base" http://127.0.0.1:18495/gateway "$work/flex-echo.amf"
  fi
  run amf0-file "$gate_file" http://127.0.0.1:18486/gateway "$work/amf0-echo.amf"
  run uring-amf0 "$gate_uring" http://127.0.0.1:18499/gateway "$work/amf0-echo.amf"
  run uring-flex "$gate_uring" http://127.0.0.1:18499/gateway "$work/flex-echo.amf"
  run threads-1 "$gate_t1" http://127.0.0.1:18491/gateway "$work/amf0-echo.amf"
  run threads-2 "$gate_t2" http://127.0.0.1:18492/gateway "$work/amf0-echo.amf"
  run redis-anon "$gate_redis" http://127.0.0.1:18483/gateway "$work/amf0-echo.amf"
  run redis-sess "$gate_redis" http://127.0.0.1:18483/gateway "$work/amf0-echo.amf" \
    "AMFGATESESSIONID=$session"
  run slow-quiet "$slow" http://127.0.0.1:18484/gateway "$work/amf0-echo.amf"
  AMF_BODY="$work/slow-block.amf" timeout $((seconds + 3)) wrk -t1 -c16 -d"$((seconds + 2))s" \
    -s tests/bench/load/post.lua http://127.0.0.1:18484/gateway >"$work/blockers.txt" &
  blockers=$!
  sleep 1
  run slow-busy "$slow" http://127.0.0.1:18484/gateway "$work/amf0-echo.amf"
  wait "$blockers" || true
done >"$work/results"

# Medians per case, and ratios to the ceiling's medians.
awk -v rounds="$rounds" '
  function median(list,   n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return a[int((n + 1) / 2)]
  }
  { rps[$1] = rps[$1] " " $2; p50[$1] = p50[$1] " " $3; p99[$1] = p99[$1] " " $4
    cpu[$1] = cpu[$1] " " $5; err[$1] += $6; order[$1] = NR }
  END {
    c_rps = median(rps["ceiling"]); c_cpu = median(cpu["ceiling"])
    printf "%-12s %9s %8s %8s %12s %10s %10s %7s\n", "case", "req/s", "p50 ms", "p99 ms",
      "cpu us/req", "req/s ratio", "cpu ratio", "errors"
    cases = "ceiling sync-ceiling amf0-echo flex-echo amf0-log flex-log amf0-file threads-1 " \
            "threads-2 redis-anon redis-sess slow-quiet slow-busy uring-amf0 uring-flex"
    if ("base-amf0" in cpu) cases = cases " base-amf0 base-flex"
    count = split(cases, names, " ")
    for (k = 1; k <= count; k++) {
      n = names[k]
      printf "%-12s %9d %8.3f %8.3f %12.2f %10.2f %10.2f %7d\n", n, median(rps[n]), median(p50[n]),
        median(p99[n]), median(cpu[n]), median(rps[n]) / c_rps, c_cpu / median(cpu[n]), err[n]
    }
    printf "(medians of %d interleaved rounds; cpu ratio = ceiling cpu / case cpu)\n", rounds
    if ("base-amf0" in cpu) {
      printf "against the baseline binary, on the same defaults: cpu per request amf0 %.2fx, " \
             "flex %.2fx; req/s amf0 %.2fx, flex %.2fx (this build / the baseline)\n",
        median(cpu["amf0-log"]) / median(cpu["base-amf0"]),
        median(cpu["flex-log"]) / median(cpu["base-flex"]),
        median(rps["amf0-log"]) / median(rps["base-amf0"]),
        median(rps["flex-log"]) / median(rps["base-flex"])
    }
    printf "io_uring (AMFGATE_IO_URING) against epoll, the same defaults: cpu per request " \
           "amf0 %.2fx, flex %.2fx; amf0 against the synchronous ceiling %.2fx (goal <= 1.0x)\n",
      median(cpu["uring-amf0"]) / median(cpu["amf0-log"]),
      median(cpu["uring-flex"]) / median(cpu["flex-log"]),
      median(cpu["uring-amf0"]) / median(cpu["sync-ceiling"])
    printf "access log cost, cpu per request with the log / without: amf0 to stdout %.2fx, " \
           "amf0 to a file %.2fx, flex to stdout %.2fx (goal <= 1.10x)\n",
      median(cpu["amf0-log"]) / median(cpu["amf0-echo"]),
      median(cpu["amf0-file"]) / median(cpu["amf0-echo"]),
      median(cpu["flex-log"]) / median(cpu["flex-echo"])
    for (k = 1; k <= 2; k++) {
      c = k == 1 ? "ceiling" : "sync-ceiling"
      printf "on the defaults against %s: cpu per request amf0 %.2fx (goal <= 1.10x), " \
             "flex %.2fx (goal <= 1.25x); p99 amf0 %.2fx, flex %.2fx (goal <= 2x)\n", c,
        median(cpu["amf0-log"]) / median(cpu[c]), median(cpu["flex-log"]) / median(cpu[c]),
        median(p99["amf0-log"]) / median(p99[c]), median(p99["flex-log"]) / median(p99[c])
    }
    # wrk shares the cores: the projection is from CPU per request, as if the client were
    # elsewhere and each core did what a core does with 2 threads.
    printf "threads (taskset, AMF0 echo, defaults): 1 thread on 1 core %d req/s, %.2f us cpu a " \
           "request; 2 threads on 2 cores %d req/s (%.2fx), %.2f us; projected for 16 cores: " \
           "16 x 1e6 / %.2f us = %d req/s\n", median(rps["threads-1"]), median(cpu["threads-1"]),
      median(rps["threads-2"]), median(rps["threads-2"]) / median(rps["threads-1"]),
      median(cpu["threads-2"]), median(cpu["threads-2"]), 16e6 / median(cpu["threads-2"])
  }' "$work/results"

# System calls per request (issue 39): perf counts raw_syscalls:sys_enter of each server, all
# its threads, while wrk runs against it; one run each, after the rounds.
syscalls() {  # syscalls NAME PID URL BODY: "NAME calls_per_request"
  local out
  out=$(perf stat -e raw_syscalls:sys_enter -x, -p "$2" -- env AMF_BODY="$4" "${post[@]}" "$3" \
    2>"$work/perf-stat")
  echo "$out" | awk -v n="$1" -v calls="$(cut -d, -f1 "$work/perf-stat")" '/^RESULT/ {
    for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
    printf "%s %.2f\n", n, calls / v["requests"] }'
}
if perf stat -e raw_syscalls:sys_enter -x, true >/dev/null 2>&1; then
  {
    syscalls ceiling "$bare" http://127.0.0.1:18480/ "$work/amf0-echo.amf"
    syscalls sync-ceiling "$bare_sync" http://127.0.0.1:18487/ "$work/amf0-echo.amf"
    syscalls amf0-log "$gate_log" http://127.0.0.1:18485/gateway "$work/amf0-echo.amf"
    syscalls uring-amf0 "$gate_uring" http://127.0.0.1:18499/gateway "$work/amf0-echo.amf"
  } >"$work/syscalls"
  awk '{ s[$1] = $2 } END {
    printf "system calls per AMF0 echo request (perf stat, every thread of the server): " \
           "ceiling %.2f, sync-ceiling %.2f, amfgate on the defaults %.2f (%.2fx the " \
           "synchronous ceiling'"'"'s), the same on io_uring %.2f (%.2fx)\n", s["ceiling"],
      s["sync-ceiling"], s["amf0-log"], s["amf0-log"] / s["sync-ceiling"], s["uring-amf0"],
      s["uring-amf0"] / s["sync-ceiling"] }' "$work/syscalls"
else
  echo "system calls per request: perf cannot count raw_syscalls:sys_enter here; no figures"
fi

# Idle keep-alive connections (issue 13, goal 6): the AMF0 echo from the busy connections to an
# amfgate on the defaults (access log on), alone and while 10,000 more connections, each having
# made one call, stay open and idle (idle_conns.cpp); the daemon's RSS with them. Limits and
# the file limit raised for so many connections from one address; rounds interleaved.
ulimit -n 20000
idle=10000
cat >"$work/amfgate-idle.json" <<JSON
{"listen": {"address": "127.0.0.1", "port": 18489}, "threads": 2,
 "limits": {"max_connections": $((idle + 1000)), "max_connections_per_client": 0,
            "idle_timeout_ms": 600000}}
JSON
build/bench/server/amfgate --config "$work/amfgate-idle.json" >"$work/amfgate-idle.log" &
gate_idle=$!
pids+=("$gate_idle")
sleep 0.5
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
mkfifo "$work/hold"
for r in $(seq "$rounds"); do
  run idle-alone "$gate_idle" http://127.0.0.1:18489/gateway "$work/amf0-echo.amf"
  before=$(rss_kb "$gate_idle")
  build/bench/tests/bench/idle_conns 18489 "$idle" "$work/amf0-echo.amf" <"$work/hold" \
    >"$work/idle.txt" &
  holder=$!
  exec 3>"$work/hold"
  until grep -q '^held=' "$work/idle.txt"; do sleep 0.1; done
  line=$(run idle-held "$gate_idle" http://127.0.0.1:18489/gateway "$work/amf0-echo.amf")
  with=$(rss_kb "$gate_idle")
  exec 3>&-
  wait "$holder"
  echo "$line $with $before $(tr '\n' ' ' <"$work/idle.txt")"
  sleep 1  # the daemon closes the 10,000 as their client goes
done >"$work/idle-results"
awk -v idle="$idle" -v conns="$connections" '
  $1 == "idle-alone" { alone[++a] = $2 }
  $1 == "idle-held" { held[++h] = $2; rss[h] = $7; grown[h] = $7 - $8
    for (i = 9; i <= NF; i++) { split($i, kv, "="); v[kv[1]] += kv[2] } }
  function median(x, n,   i, j, t) {
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
    return x[int((n + 1) / 2)]
  }
  END {
    ra = median(alone, a); rh = median(held, h); mr = median(rss, h); mg = grown[1]
    printf "idle keep-alive connections: %d held idle (failed to open: %d, closed by the daemon " \
           "while held: %d); AMF0 echo from %d busy connections %d req/s alone, %d with them: " \
           "%.2fx (goal >= 0.80x); daemon RSS with them %.0f MB (goal < 200 MB), grown by " \
           "%.1f KB a connection as the first %d opened\n", v["held"] / h, v["failed"], v["closed_by_server"], conns,
      ra, rh, rh / ra, mr / 1024, mg / idle, idle
  }' "$work/idle-results"

# Server push. Each consumer holds a connection (a streaming one two): limits raised.
cat >"$work/amfgate-push.json" <<JSON
{"listen": {"address": "127.0.0.1", "port": 18488}, "threads": 2,
 "limits": {"max_connections": 10000, "max_connections_per_client": 0,
            "max_requests_per_client": 0},
 "messaging": {"poll_wait_ms": 30000, "max_clients_per_caller": 0,
               "max_subscriptions_per_caller": 0, "destinations": {"bench": {}}}}
JSON
build/bench/server/amfgate --config "$work/amfgate-push.json" >"$work/amfgate-push.log" &
push=$!
pids+=("$push")
sleep 0.5
line=$(build/bench/tests/bench/push_load 18488 "$push" 1000 1000 20 "$seconds" || true)
echo "push: $line"
echo "$line" | awk '{
  for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
  printf "server push, 1,000 long-polling + 1,000 streaming consumers, 20 messages/s: " \
         "%d of %d deliveries (goal: every one), %d/s, p50 %.1f ms, p99 %.1f ms (goal <= 20 ms), " \
         "RSS %.0f MB (goal < 150 MB), %.1f us cpu per delivery\n",
    v["delivered"], v["expected"], v["deliveries_per_s"], v["p50_ms"], v["p99_ms"], v["rss_mb"],
    v["cpu_us_per_delivery"] }'
# Each kind alone on the same daemon: 2,000 streams at 40 messages a second (80,000
# deliveries/s), and 1,000 long polls at 20 (each delivery a poll's whole cycle).
streams=$(build/bench/tests/bench/push_load 18488 "$push" 0 2000 40 "$seconds" || true)
polls=$(build/bench/tests/bench/push_load 18488 "$push" 1000 0 20 "$seconds" || true)
echo "push streams: $streams"
echo "push polls: $polls"
# The floor of the same push: 2,000 loopback connections, frames of the streamed size, 20 a
# second, written by one thread with one send each and then gathered 4 to a writev, with no
# daemon (push_floor.cpp): the kernel's share, and amfgate's CPU per delivery against it.
frame=$(echo "$line" | tr ' ' '\n' | awk -F= '$1 == "stream_frame_bytes" && $2 > 0 { print $2 }')
floor=$(build/bench/tests/bench/push_floor 2000 "${frame:-400}" 20 "$seconds" 4 || true)
echo "floor: $floor"
# The floor against the mixed run, then each kind alone against the floor; each input a line
# of key=value words.
awk -v push="$line" -v floor="$floor" -v s="$streams" -v p="$polls" '
function read_kv(text, out,  n, i, w, kv) {
  n = split(text, w, " ")
  for (i = 1; i <= n; i++) { split(w[i], kv, "="); out[kv[1]] = kv[2] }
}
BEGIN {
  read_kv(push, a); read_kv(floor, f); read_kv(s, st); read_kv(p, lp)
  if (f["cpu_us_per_delivery"] <= 0 || f["gathered_cpu_us_per_delivery"] <= 0) {
    print "push floor: no figure (push_floor failed)"; exit
  }
  printf "push floor, the same 2,000 connections and %d-byte frames with no daemon: %.2f us cpu " \
         "per delivery with one send each, %.2f gathered 4 to a write; amfgate per delivery " \
         "against them: %.1fx, %.1fx\n", f["frame_bytes"], f["cpu_us_per_delivery"],
    f["gathered_cpu_us_per_delivery"], a["cpu_us_per_delivery"] / f["cpu_us_per_delivery"],
    a["cpu_us_per_delivery"] / f["gathered_cpu_us_per_delivery"]
  if (st["cpu_us_per_delivery"] <= 0 || lp["cpu_us_per_delivery"] <= 0) {
    print "push alone: no figure (push_load failed)"; exit
  }
  printf "push, 2,000 streams alone at 40 messages/s: %d of %d, %.2f us cpu per delivery (goal " \
         "<= 8 us), %.2fx the floor per send (goal <= 2x), %.0f deliveries per core-second, " \
         "p99 %.1f ms (goal <= 20 ms); 1,000 long polls alone at 20/s: %d of %d, %.2f us cpu " \
         "per poll cycle (goal <= 15 us), %.0f per core-second, p99 %.1f ms\n",
    st["delivered"], st["expected"], st["cpu_us_per_delivery"],
    st["cpu_us_per_delivery"] / f["cpu_us_per_delivery"], 1e6 / st["cpu_us_per_delivery"],
    st["p99_ms"], lp["delivered"], lp["expected"], lp["cpu_us_per_delivery"],
    1e6 / lp["cpu_us_per_delivery"], lp["p99_ms"] }'

# The bridge (issue 38): gunicorn (2 gthread workers of 8 threads, as examples/bridge runs it)
# with one route, amfgate on the defaults plus the upstream (its pool: 16 connections). Rounds
# interleave: the bridged AMF0 call (bridge-amf0), the same JSON to gunicorn straight
# (json-direct), and the AMF0 echo of the same daemon (bridge-base), whose CPU per request is
# the baseline of amfgate's own per bridged call.
if command -v gunicorn >/dev/null; then
  cat >"$work/amfgate-bridge.json" <<JSON
{"listen": {"address": "127.0.0.1", "port": 18496}, "threads": 2,
 "upstreams": {"bench": {"url": "http://127.0.0.1:18497/amf/", "max_connections": 16}},
 "bridge": {"Bench": "bench"}}
JSON
  (cd tests/bench/load && exec gunicorn --bind 127.0.0.1:18497 --workers 2 --threads 8 \
    --worker-class gthread --keep-alive 75 bridge_backend:app) >"$work/gunicorn.log" 2>&1 &
  pids+=($!)
  build/bench/server/amfgate --config "$work/amfgate-bridge.json" >"$work/amfgate-bridge.log" &
  bridged=$!
  pids+=("$bridged")
  for _ in $(seq 50); do (: >/dev/tcp/127.0.0.1/18497) 2>/dev/null && break; sleep 0.1; done
  sleep 0.5
  for r in $(seq "$rounds"); do
    run bridge-base "$bridged" http://127.0.0.1:18496/gateway "$work/amf0-echo.amf"
    run bridge-amf0 "$bridged" http://127.0.0.1:18496/gateway "$work/bridge-echo.amf"
    AMF_CONTENT_TYPE=application/json run json-direct "$bridged" \
      http://127.0.0.1:18497/amf/Bench/echo tests/bench/load/bridge-direct.json
  done >"$work/bridge-results"
  # Connects, and calls cancelled mid-answer: wrk hangs up with calls in flight at the end of
  # each round, and each such call's connection is closed (it cannot be reused mid-answer).
  python3 -c 'import urllib.request; print(urllib.request.urlopen("http://127.0.0.1:18496/metrics").read().decode())' \
    >"$work/bridge-metrics"
  connects=$(awk '/^amfgate_upstream_connects_total/ {print $2}' "$work/bridge-metrics")
  cancelled=$(awk '/^amfgate_upstream_calls_total.*outcome="cancelled"/ {print $2}' "$work/bridge-metrics")
  awk -v connects="$connects" -v cancelled="$cancelled" '
    function median(list,   n, a, i, j, t) {
      n = split(list, a, " ")
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
      return a[int((n + 1) / 2)]
    }
    { rps[$1] = rps[$1] " " $2; p50[$1] = p50[$1] " " $3; cpu[$1] = cpu[$1] " " $5; err[$1] += $6 }
    END {
      printf "bridge, AMF0 calls through amfgate to gunicorn/Flask: %d req/s (p50 %.2f ms), the same " \
             "JSON to gunicorn straight %d req/s: %.2fx (goal >= 0.90x); amfgate cpu %.2f us per " \
             "bridged call against %.2f us per AMF0 echo: %.2fx (goal <= 2x); connects to the " \
             "backend over the run: %d, with %d calls cancelled when wrk hung up at the end of a " \
             "round (each closes the connection it held) (goal: the pool, 16, plus those); " \
             "errors %d\n",
        median(rps["bridge-amf0"]), median(p50["bridge-amf0"]), median(rps["json-direct"]),
        median(rps["bridge-amf0"]) / median(rps["json-direct"]), median(cpu["bridge-amf0"]),
        median(cpu["bridge-base"]), median(cpu["bridge-amf0"]) / median(cpu["bridge-base"]),
        connects, cancelled, err["bridge-amf0"] + err["json-direct"]
    }' "$work/bridge-results"
else
  echo "bridge: gunicorn is missing (scripts/install-deps.sh installs it); no figures"
fi
