#!/usr/bin/env bash
# The AMF0 EchoTest answers of a fresh amfgate, read by the npm package `amf` 0.1.0.
#   peer/run.sh AMFGATE ECHOTEST
# Needs the package installed beside this script: npm ci --prefix tests/echotest/peer
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ ! -f "$here/node_modules/amf/package.json" ]; then
  echo "the npm peer is not installed; run: npm ci --prefix $here" >&2
  exit 1
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$here/../run-local.sh" "$1" "$2" --modes amf0 --save-amf0 "$dir" >"$dir/echotest.log" || {
  cat "$dir/echotest.log"
  exit 1
}
tail -1 "$dir/echotest.log"
node "$here/check.js" "$dir"
