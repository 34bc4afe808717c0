#!/usr/bin/env bash
# Builds amfgate (Release) and runs the daemon in the foreground on its built-in defaults
# (port 8080, gateway paths /gateway and /messagebroker/amf, the echo service). Arguments
# go to amfgate, e.g. scripts/run.sh --config config/example.json. Ctrl-C stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh build
scripts/build-release.sh
exec build/release/server/amfgate "$@"
