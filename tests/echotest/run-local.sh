#!/usr/bin/env bash
# Runs the EchoTest suite against a fresh amfgate on its built-in defaults (any free
# loopback port), then stops it with SIGTERM and requires a clean exit.
#   run-local.sh AMFGATE ECHOTEST [ECHOTEST ARGS...]
set -uo pipefail
amfgate=$1 echotest=$2
shift 2
work=$(mktemp -d)
echo '{"listen": {"address": "127.0.0.1", "port": 0}, "log": {"access": false}}' >"$work/c.json"
"$amfgate" --config "$work/c.json" >"$work/log" 2>&1 &
pid=$!
port=
for _ in $(seq 200); do
  port=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$work/log")
  [ -n "$port" ] && break
  sleep 0.05
done
[ -n "$port" ] || { echo "amfgate did not start:"; cat "$work/log"; kill "$pid"; exit 1; }
"$echotest" "http://127.0.0.1:$port/gateway" "$@"
status=$?
kill -TERM "$pid"
wait "$pid" || { echo "amfgate did not exit cleanly"; status=1; }
rm -rf "$work"
exit $status
