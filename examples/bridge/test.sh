#!/usr/bin/env bash
# The example as it runs: the Flask backend under Debian's gunicorn, the amfgate daemon on
# amfgate.json, and calls through amfcall: a typed User, a fault, a login and a save, a push
# from the backend that a Flex Consumer receives (amfcall --flex-poll), and what a Producer
# says reaching the backend. Used by the test command (tests/bridge).
#   examples/bridge/test.sh AMFGATE AMFCALL
set -euo pipefail
amfgate=$1
amfcall=$2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
backend_port=$(port)
amfgate_port=$(port)
token=change-me-to-a-long-random-token
# The example's config, on ports of this run's own.
sed -e "s|\"port\": 8080|\"port\": $amfgate_port|" -e "s|0.0.0.0|127.0.0.1|" \
  -e "s|127.0.0.1:5000|127.0.0.1:$backend_port|" "$here/amfgate.json" >"$work/amfgate.json"

(cd "$here" && BACKEND_BIND=127.0.0.1:$backend_port AMFGATE_URL=http://127.0.0.1:$amfgate_port \
  AMFGATE_PUBLISH_TOKEN=$token exec gunicorn -c gunicorn.conf.py app:app) >"$work/gunicorn.log" 2>&1 &
pids+=($!)
"$amfgate" --config "$work/amfgate.json" >"$work/amfgate.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
  (: >/dev/tcp/127.0.0.1/$backend_port) 2>/dev/null && (: >/dev/tcp/127.0.0.1/$amfgate_port) 2>/dev/null && break
  sleep 0.1
done
gw=http://127.0.0.1:$amfgate_port/gateway
fail() { echo "bridge example: $*"; echo "-- amfgate"; cat "$work/amfgate.log"; echo "-- gunicorn"; cat "$work/gunicorn.log"; exit 1; }
expect() {  # expect WHAT OUTPUT PATTERN
  grep -q -- "$3" <<<"$2" || fail "$1: expected $3 in: $2"
  echo "ok: $1"
}

out=$("$amfcall" --amf3 "$gw" UserService.getUser '{"$int": 1}')
expect "a typed User from the backend" "$out" '"$class": "com.example.User"'
expect "its date" "$out" '"$date": 1551690000000'
out=$("$amfcall" --flex "$gw" UserService.getUser '{"$int": 9}' 2>&1 || true)
expect "the backend's fault" "$out" 'App.UserNotFound'
out=$("$amfcall" "$gw" UserService.saveUser '{"_explicitType": "x"}' 2>&1 || true)
expect "an access rule before the backend" "$out" 'requires a login'
out=$("$amfcall" --amf3 --user ann --password secret "$gw" UserService.saveUser \
  '{"$class": "com.example.User", "$sealed": ["id", "name", "email", "joined"], "id": {"$int": 3}, "name": "Cy Ode", "email": "cy@example.com", "joined": {"$date": 1700000000000}}')
expect "a save by an editor, typed both ways" "$out" '"Cy Ode"'
out=$("$amfcall" --amf3 "$gw" Chat.announce '"hello, consumers"')
expect "a push from the backend through the publish endpoint" "$out" 'true'
metrics=$(python3 -c "import urllib.request,sys; print(urllib.request.urlopen(sys.argv[1]).read().decode())" \
  "http://127.0.0.1:$amfgate_port/metrics")
# saveUser's notice and the announcement
expect "both pushes published" "$metrics" 'amfgate_messaging_published_total{destination="chat"} 2'
# at most one per I/O thread (2): calls one after another reuse them
expect "a connection to the backend per I/O thread" "$metrics" 'amfgate_upstream_connects_total{upstream="backend"} [12]$'

echo "bridge example: all ok"
