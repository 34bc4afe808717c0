#!/usr/bin/env bash
# Builds the release binaries (amfgate, amfcall, amfdump), the Python module and the Debian
# packages (amfgate, amfgate-dev, python3-amfgate) into build/release. One source of truth for
# how a release is built: scripts/run.sh, the test command (scripts/test.sh) and
# docker/Dockerfile all run this script.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DAMFGATE_TESTS=OFF -DAMFGATE_BENCH=OFF \
  -DAMFGATE_PYTHON=ON >/dev/null
cmake --build build/release -j"$(nproc)" --target amfgate amfcall amfdump amfgate_python \
  >/dev/null
(cd build/release && cpack -G DEB >/dev/null)
