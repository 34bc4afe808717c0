#!/usr/bin/env bash
# Builds amfgate (Release) and runs it. Until the daemon lands this runs the dump tool on
# a sample remoting packet: amfdump prints it as typed JSON.
#   scripts/run.sh [FILE]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh build
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DAMFGATE_TESTS=OFF -DAMFGATE_BENCH=OFF \
  >/dev/null
cmake --build build/release -j"$(nproc)" --target amfdump >/dev/null
exec build/release/codec/amfdump "${1:-codec/tools/samples/echo-request.amf}"
