#!/usr/bin/env bash
# Memory after a burst: the release amfgate on its defaults (access log on) echoes 8 requests
# of 12 MiB at once, 3 times over; prints its resident size before, at the peak (VmHWM) and
# 2 s after the last burst. With glibc's default malloc the peak stayed resident; amfgate fixes
# M_MMAP_THRESHOLD at 1 MiB so that large blocks go back to the system when freed.
#   tests/bench/load/rss.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
command -v curl >/dev/null || { echo "rss: curl is missing" >&2; exit 1; }
cmake -S . -B build/bench -DCMAKE_BUILD_TYPE=Release -DAMFGATE_TESTS=OFF >/dev/null
cmake --build build/bench -j"$(nproc)" --target amfgate amfdump >/dev/null

work=$(mktemp -d)
gate=
cleanup() { [ -n "$gate" ] && kill "$gate" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
{
  printf '{"version": 0, "headers": [], "bodies": [{"target": "echo", "response": "/1", '
  printf '"length": 4294967295, "value": [{"$longstring": "'
  head -c $((12 << 20)) /dev/zero | tr '\0' 'x'
  printf '"}]}]}'
} >"$work/big.json"
build/bench/codec/amfdump --encode --packet "$work/big.json" >"$work/big.amf"
cat >"$work/amfgate.json" <<JSON
{"listen": {"address": "127.0.0.1", "port": 18485}}
JSON
build/bench/server/amfgate --config "$work/amfgate.json" >"$work/amfgate.log" & gate=$!
sleep 1
rss() { awk -v k="$1:" '$1 == k {print int($2 / 1024)}' "/proc/$gate/status"; }
echo "request body: $(($(stat -c %s "$work/big.amf") >> 20)) MiB; resident MiB:"
echo "  idle            $(rss VmRSS)"
for round in 1 2 3; do
  curls=()
  for i in 1 2 3 4 5 6 7 8; do
    curl -s -o /dev/null -w '%{http_code}\n' -H 'Content-Type: application/x-amf' \
      --data-binary @"$work/big.amf" http://127.0.0.1:18485/gateway >"$work/status-$i" &
    curls+=($!)
  done
  wait "${curls[@]}"
  echo "  after burst $round $(rss VmRSS) (statuses: $(sort "$work"/status-* | uniq -c | xargs))"
done
echo "  peak            $(rss VmHWM)"
sleep 2
echo "  2 s later       $(rss VmRSS)"
