#!/usr/bin/env bash
# Runs every test: the unit and conformance suites, the Python module's suites, the
# live-daemon, EchoTest and deployment suites and the fuzz replays under ASan+UBSan (g++), the
# release build and .debs with the packaging checks, the contacts example built against the
# installed package, a benchmark smoke run (each case checks its own result, the push client
# that every message arrived), each libFuzzer target for FUZZ_SECONDS (default 60) under the
# sanitizers (clang-16), and clang-format. Prints "N passed, M failed" last; exits non-zero on
# any failure.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
jobs=$(nproc)
fuzz_seconds=${FUZZ_SECONDS:-60}
shared=$(cd "$root/../shared" 2>/dev/null && pwd) || {
  echo "test: ../shared (corpus, specs, workloads) is missing beside the checkout" >&2
  exit 1
}

scripts/install-deps.sh test || exit 1
# The EchoTest's peer, the npm package amf 0.1.0, and the browser suite's Apache Royale
# 0.9.12 and puppeteer-core (each pinned by its package-lock.json).
for dir in tests/echotest/peer tests/browser; do
  npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error || exit 1
done
passed=0
failed=0
step() {  # step NAME COMMAND...: runs a step, counts it
  echo "== $1"
  shift
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED"; fi
}

build() {  # build DIR CMAKE-ARGS...
  local dir=$1
  shift
  mkdir -p "$dir"
  if ! { cmake -S . -B "$dir" -DAMFGATE_SHARED_DIR="$shared" "$@" &&
    cmake --build "$dir" -j"$jobs"; } >"$dir/build.log" 2>&1; then
    tail -50 "$dir/build.log"
    return 1
  fi
}

# 1. Sanitizer build and ctest (unit, conformance, fuzz replays).
build build/asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAMFGATE_SANITIZE=ON -DAMFGATE_BENCH=OFF \
  -DAMFGATE_PYTHON=ON ||
  exit 1
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
(cd build/asan && ctest --output-on-failure -j"$jobs") | tee build/ctest.log
ctest_status=${PIPESTATUS[0]}
ctest_passed=$(grep -oE '[0-9]+ tests failed out of [0-9]+' build/ctest.log |
  awk '{print $6 - $1}')
ctest_failed=$(grep -oE '[0-9]+ tests failed out of' build/ctest.log | awk '{print $1}')
passed=$((passed + ${ctest_passed:-0}))
failed=$((failed + ${ctest_failed:-1}))
[ "$ctest_status" -eq 0 ] || [ "${ctest_failed:-1}" -gt 0 ] || failed=$((failed + 1))

# 2. The release build and Debian package, as the README, run.sh and docker/Dockerfile make
#    them, with the packaging checks; the whole Release tree with tests and benchmarks, a short
#    benchmark run, and the allocations per request (alloc_count fails if a request allocates).
release() {
  scripts/build-release.sh && tests/deploy/check-packaging.sh build/release
}
step "release build, .deb and packaging checks" release
# The Python module as pip installs it with Debian's setuptools (no PyPI): into a venv that
# sees the system's packages, imported from there.
pip_install() {
  local venv status
  venv=$(mktemp -d)
  /usr/bin/python3 -m venv --system-site-packages "$venv" &&
    "$venv/bin/pip" install --quiet --no-build-isolation --no-index . &&
    (cd "$venv" && "$venv/bin/python" -c "
import amfgate
assert amfgate.__file__.startswith('$venv'), amfgate.__file__
assert amfgate.loads(amfgate.dumps({'a': [1, 'two']})) == {'a': [1, 'two']}
print('pip installed amfgate', amfgate.__file__)")
  status=$?
  rm -rf "$venv"
  return $status
}
step "pip install of the Python module" pip_install
# The examples, copied out of the checkout and built against the release tree installed to a
# temporary prefix (`cmake --install --component dev`, what amfgate-dev holds): the contacts
# daemon with its own test and the service console on it in Chromium, and the codec alone
# (COMPONENTS codec) on a corpus packet.
examples() {
  local work
  work=$(mktemp -d)
  cp -r examples "$work/src" &&
    cmake --install build/release --prefix "$work/prefix" --component dev >/dev/null &&
    { cmake -S "$work/src/contacts" -B "$work/contacts" -DCMAKE_PREFIX_PATH="$work/prefix" &&
      cmake --build "$work/contacts" -j"$jobs" &&
      cmake -S "$work/src/codec" -B "$work/codec" -DCMAKE_PREFIX_PATH="$work/prefix" &&
      cmake --build "$work/codec"; } >"$work/build.log" 2>&1 ||
    { tail -50 "$work/build.log"; return 1; }
  (cd "$work/contacts" && ctest --output-on-failure) || return 1
  # The service console in Chromium, on the contacts daemon; its screenshots stay in
  # build/console for a person to look at.
  node tests/browser/console.mjs "$work/contacts/contacts" "$work/src/contacts/contacts.json" \
    "$shared/corpus/rocketamf/request/remotingMessage.bin" "$root/build/console" || return 1
  local targets
  targets=$("$work/codec/amftargets" "$shared/corpus/rocketamf/request/multiple-simple-request.bin")
  echo "$targets"
  grep -qx 'body TestController.test2 -> /2' <<<"$targets" || return 1
  rm -rf "$work"
}
step "the examples against the installed package" examples
# The load script's push client, briefly, against a release daemon: it fails unless every
# message reaches every consumer.
push_smoke() {
  local work pid status
  work=$(mktemp -d)
  cat >"$work/push.json" <<JSON
{"listen": {"address": "127.0.0.1", "port": 18489},
 "limits": {"max_connections_per_client": 0, "max_requests_per_client": 0},
 "messaging": {"poll_wait_ms": 30000, "max_clients_per_caller": 0,
               "max_subscriptions_per_caller": 0, "destinations": {"bench": {}}}}
JSON
  build/bench/server/amfgate --config "$work/push.json" >"$work/amfgate.log" &
  pid=$!
  for _ in $(seq 50); do
    (: >/dev/tcp/127.0.0.1/18489) 2>/dev/null && break
    sleep 0.1
  done
  build/bench/tests/bench/push_load 18489 "$pid" 20 20 10 2
  status=$?
  kill "$pid"
  wait "$pid"
  rm -rf "$work"
  return "$status"
}
# The Python module's benchmarks, once through each case (each checks its result): the codec
# against Py3AMF pure and with its Cython extension, and a Py3AMF WSGI gateway under gunicorn
# with and without the drop-in.
python_smoke() {
  tests/bench/python/build_cpyamf.sh "$shared" build/bench/cpyamf &&
    PYTHONPATH=build/bench/python:build/bench/cpyamf /usr/bin/python3 tests/bench/python/bench.py \
      "$shared" --quick &&
    tests/bench/python/gateway.sh build/bench/python:build/bench/cpyamf 1 1
}
# The Release tree is built whole, tests included, as a user or packager would build it: a
# warning that only -O2 shows (g++ 12's -Wmaybe-uninitialized) fails here.
bench_smoke() {
  mkdir -p build/bench
  if ! { cmake -S . -B build/bench -DAMFGATE_SHARED_DIR="$shared" -DCMAKE_BUILD_TYPE=Release \
    -DAMFGATE_TESTS=ON -DAMFGATE_PYTHON=ON && cmake --build build/bench -j"$jobs"; } \
    >build/bench/build.log 2>&1; then
    tail -50 build/bench/build.log
    return 1
  fi
  build/bench/tests/bench/amf_bench --benchmark_min_time=0.01 | tee build/bench.log &&
    ! grep -q "ERROR OCCURRED" build/bench.log &&
    build/bench/tests/bench/alloc_count 2000 &&
    push_smoke &&
    python_smoke
}
step "the Release tree with its tests, and a benchmark smoke run" bench_smoke

# 3. libFuzzer targets, seeded with the corpus.
fuzz() {
  CXX=clang++-16 build build/fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAMFGATE_FUZZ=ON \
    -DAMFGATE_SANITIZE=ON -DAMFGATE_TESTS=OFF -DAMFGATE_BENCH=OFF || return 1
  local work
  work=$(mktemp -d)
  mkdir -p "$work"/{amf0,amf3,packet,json,gateway,selector,bridge}
  cp "$shared"/corpus/rocketamf/objects/amf0-* "$work/amf0/"
  cp "$shared"/corpus/rocketamf/objects/amf3-* "$shared"/corpus/phpamf/Parse/mock/* "$work/amf3/"
  cp "$shared"/corpus/rocketamf/request/* "$shared"/corpus/phpamf/Request/mock/* "$work/packet/"
  cp "$work"/packet/* "$work/gateway/"
  cp "$root"/tests/fuzz/json_seeds/* "$work/json/"
  cp "$root"/tests/fuzz/json_seeds/* "$root"/tests/fuzz/bridge_seeds/* \
    "$shared"/corpus/rocketamf/objects/amf3-* "$work/bridge/"
  cp "$root"/tests/fuzz/selector_seeds/* "$work/selector/"
  cp "$root"/tests/fuzz/gateway_seeds/* "$work/gateway/"
  local ok=0
  for t in amf0 amf3 packet json gateway selector bridge; do
    echo "-- fuzz_$t for ${fuzz_seconds}s"
    if ! (cd "$work" && "$root/build/fuzz/tests/fuzz/fuzz_$t" -max_total_time="$fuzz_seconds" \
      -print_final_stats=1 "$t" 2>&1 | tail -4); then
      ok=1
      echo "fuzz_$t found a failure; its input is in $work"
    fi
  done
  return $ok
}
step "fuzzing" fuzz

# 4. Formatting.
format_check() {
  git ls-files '*.cpp' '*.hpp' | xargs clang-format --dry-run --Werror
}
step "clang-format" format_check

echo
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
