#!/usr/bin/env bash
# A Py3AMF WSGI echo gateway under gunicorn (Debian's, one sync worker), driven by wrk, with
# and without amfgate's drop-in, alternating, in one run: requests per second and the
# gateway's CPU per request (user + system ticks of the gunicorn processes).
#   gateway.sh PYTHONPATH [SECONDS] [ROUNDS]
# PYTHONPATH holds the amfgate package and a Py3AMF tree (build_cpyamf.sh's, with cpyamf).
set -euo pipefail
cd "$(dirname "$0")/../../.."
pythonpath=$1
seconds=${2:-5}
rounds=${3:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
port=18590
# The request: an AMF3 NetConnection call echo(list of 50 objects of 6 members), as amfgate
# writes it (the same bytes for both gateways).
PYTHONPATH=$pythonpath /usr/bin/python3 - "$work/echo.amf" <<'PY'
import datetime, sys
import amfgate
rows = [{"id": i, "name": "product-%04d" % i, "price": i * 1.25, "tags": ["red", "new"],
         "created": datetime.datetime(2023, 11, 14, tzinfo=datetime.timezone.utc), "ok": True}
        for i in range(50)]
packet = amfgate.Packet([], [amfgate.Body("echo", "/1", [rows])], version=3)
open(sys.argv[1], "wb").write(amfgate.encode_packet(packet))
PY
ticks=$(getconf CLK_TCK)
cpu() {  # cpu PID: the CPU ticks of gunicorn's master and its workers
  local total=0 p
  for p in "$1" $(cat "/proc/$1/task/$1/children"); do
    total=$((total + $(awk '{print $14 + $15}' "/proc/$p/stat")))
  done
  echo "$total"
}
run() {  # run DROP_IN: prints "rps cpu_us_per_request"
  AMFGATE_DROP_IN=$1 PYTHONPATH="$pythonpath:tests/bench/python" gunicorn -w 1 -b "127.0.0.1:$port" \
    --log-level warning gateway_app:application >"$work/gunicorn.log" 2>&1 &
  local pid=$!
  for _ in $(seq 100); do (: >/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
  # The reply must echo the request: one check before measuring.
  PYTHONPATH=$pythonpath /usr/bin/python3 -c "
import urllib.request
import amfgate
sent = open('$work/echo.amf', 'rb').read()
request = urllib.request.Request('http://127.0.0.1:$port/', data=sent,
                                 headers={'Content-Type': 'application/x-amf'})
reply = amfgate.decode_packet(urllib.request.urlopen(request).read())
sent = amfgate.decode_packet(sent)
assert reply.bodies[0].target == '/1/onResult', reply.bodies[0].target
assert reply.bodies[0].value == sent.bodies[0].value[0], 'the echo differs'
"
  local before after out
  before=$(cpu "$pid")
  out=$(AMF_BODY="$work/echo.amf" wrk -t1 -c4 -d"${seconds}s" -s tests/bench/load/post.lua \
    "http://127.0.0.1:$port/" | grep RESULT)
  after=$(cpu "$pid")
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  local requests errors
  requests=$(sed -E 's/.*requests=([0-9]+).*/\1/' <<<"$out")
  errors=$(sed -E 's/.*errors=([0-9]+).*/\1/' <<<"$out")
  [ "$errors" -eq 0 ] || { echo "gateway: $errors errors" >&2; cat "$work/gunicorn.log" >&2; exit 1; }
  awk -v r="$requests" -v s="$seconds" -v t=$((after - before)) -v hz="$ticks" \
    'BEGIN { printf "%.0f %.1f\n", r / s, t / hz * 1e6 / r }'
}
declare -a py3amf amfgate
for _ in $(seq "$rounds"); do
  py3amf+=("$(run 0)")
  amfgate+=("$(run 1)")
done
best() { printf '%s\n' "$@" | sort -k2 -n | head -1; }
read -r p_rps p_cpu <<<"$(best "${py3amf[@]}")"
read -r a_rps a_cpu <<<"$(best "${amfgate[@]}")"
echo "Py3AMF WSGI echo gateway, gunicorn 1 worker, 50-object AMF3 call, ${rounds} rounds of ${seconds}s each, the best:"
echo "  Py3AMF (with cpyamf): ${p_rps} req/s, ${p_cpu} us cpu per request"
echo "  with amfgate.py3amf: ${a_rps} req/s, ${a_cpu} us cpu per request"
awk -v a="$a_cpu" -v p="$p_cpu" 'BEGIN { printf "  CPU per request: the drop-in takes %.2fx of Py3AMF'"'"'s\n", a / p }'
