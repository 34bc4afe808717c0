#!/usr/bin/env bash
# Installs the Debian 12 packages that amfgate builds, tests and runs with, if any is
# missing. One source of truth: the README commands, CI and the Dockerfile all call this.
#   scripts/install-deps.sh [runtime|build|test]   (default: test, which includes build)
set -euo pipefail

build_pkgs=(g++ cmake make pkg-config nlohmann-json3-dev libboost1.81-dev libspdlog-dev
  libcrypt-dev libssl-dev libhiredis-dev libmimalloc-dev dpkg-dev file pybind11-dev python3-dev)
test_pkgs=(libgtest-dev libbenchmark-dev clang-16 libclang-rt-16-dev clang-format wrk zlib1g-dev
  redis-server nginx libsqlite3-dev chromium openjdk-17-jdk-headless python3-flask gunicorn
  liburing-dev python3-pytest python3-hypothesis python3-defusedxml cython3 python3-venv
  python3-wheel)

case "${1:-test}" in
  runtime) pkgs=(libspdlog1.10 libfmt9 libcrypt1 libssl3 libhiredis0.14 libmimalloc2.0) ;;
  build) pkgs=("${build_pkgs[@]}") ;;
  test) pkgs=("${build_pkgs[@]}" "${test_pkgs[@]}") ;;
  *) echo "usage: $0 [runtime|build|test]" >&2; exit 2 ;;
esac

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js and npm run the EchoTest's independent peer (npm package amf) and the browser suite
# (Apache Royale's compiler, puppeteer-core); any install will do. The browser suite compiles
# with Java (openjdk-17-jdk-headless) and runs in Debian's Chromium.
if [ "${1:-test}" = test ] && ! command -v npm >/dev/null; then missing+=(nodejs npm); fi
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing ${missing[*]}; run as root (or install them) first" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
