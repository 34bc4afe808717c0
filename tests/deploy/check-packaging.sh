#!/usr/bin/env bash
# Keeps the container image and the Debian package from drifting from what CI builds and
# tests (there is no Docker engine on the CI machines to build the image itself):
#  1. docker/Dockerfile's build stage runs exactly the install and build scripts that the
#     README's commands and CI run;
#  2. its runtime stage installs `scripts/install-deps.sh runtime`, and that list holds the
#     package of every shared library the release binary links (but the C and C++ runtimes
#     that every Debian image has);
#  3. the .deb that scripts/build-release.sh made holds the binary, the config and the unit,
#     and its binary and config work once unpacked;
#  4. amfgate-dev holds the headers, static libraries and CMake package, depends on the -dev
#     packages that the package finds, and has the version of amfgate;
#  5. python3-amfgate holds the module where Debian's python3 finds it, and it imports and
#     round-trips a value once unpacked.
#   check-packaging.sh [BUILD_DIR]   (default build/release)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build/release}
failed=0
check() {  # check DESCRIPTION COMMAND...
  local what=$1
  shift
  if "$@" >/dev/null 2>&1; then echo "ok   $what"; else echo "FAIL $what"; failed=1; fi
}
has_line() { grep -qxF -- "$2" "$1"; }

build_line='RUN scripts/install-deps.sh build && scripts/build-release.sh'
check "Dockerfile builds with the install and build scripts" \
  has_line "$root/docker/Dockerfile" "$build_line"
check "CI runs the test command" grep -q 'scripts/test.sh' "$root/.ci/run"
check "the test command builds the release with the same script" \
  grep -q '^[^#]*scripts/build-release.sh' "$root/scripts/test.sh"
check "the run command installs and builds the same way" \
  grep -qzF $'scripts/install-deps.sh build\nscripts/build-release.sh' "$root/scripts/run.sh"
check "Dockerfile runtime stage installs the runtime list" \
  grep -q '^RUN /tmp/install-deps.sh runtime' "$root/docker/Dockerfile"
check "Dockerfile runs as a non-root user" grep -q '^USER amfgate' "$root/docker/Dockerfile"
check "Dockerfile has a health check on /healthz" grep -q -- '--healthcheck' "$root/docker/Dockerfile"
check "compose runs three replicas with docker/amfgate.json and nginx.conf" \
  bash -c "grep -q 'replicas: 3' '$root/docker/compose.yaml' &&
           grep -q './amfgate.json:/etc/amfgate/amfgate.json' '$root/docker/compose.yaml' &&
           grep -q './nginx.conf:/etc/nginx/nginx.conf' '$root/docker/compose.yaml'"

# 2. Shared libraries of the release binary -> Debian packages -> the runtime list.
runtime=$(sed -n 's/^ *runtime) pkgs=(\(.*\)) ;;/\1/p' "$root/scripts/install-deps.sh")
base="libc6 libgcc-s1 libstdc++6"
for lib in $(ldd "$build/server/amfgate" | awk '/=> \//{print $3}'); do
  real=$(readlink -f "$lib")
  pkg=$( (dpkg -S "$real" 2>/dev/null || dpkg -S "${real#/usr}" 2>/dev/null) | head -1 | cut -d: -f1)
  check "runtime list holds $pkg (for $(basename "$lib"))" \
    bash -c "[ -n '$pkg' ] && [[ ' $runtime $base ' == *' $pkg '* ]]"
done

# 3. The Debian package.
deb=$(ls "$build"/amfgate_*.deb 2>/dev/null | head -1)
check "the .deb was built" test -f "$deb"
if [ -f "$deb" ]; then
  contents=$(dpkg-deb -c "$deb")
  for f in ./usr/bin/amfgate ./usr/bin/amfcall ./etc/amfgate/amfgate.json \
    ./lib/systemd/system/amfgate.service; do
    check ".deb holds $f" grep -q " $f\$" <<<"$contents"
  done
  check ".deb marks the config a conffile" \
    bash -c "dpkg-deb -I '$deb' conffiles | grep -qx /etc/amfgate/amfgate.json"
  check ".deb depends on hiredis and spdlog" \
    bash -c "dpkg-deb -f '$deb' Depends | grep -q libhiredis && dpkg-deb -f '$deb' Depends | grep -q libspdlog"
  unpacked=$(mktemp -d)
  dpkg-deb -x "$deb" "$unpacked"
  check "the packaged binary runs" "$unpacked/usr/bin/amfgate" --version
  check "the packaged config is valid" \
    "$unpacked/usr/bin/amfgate" --config "$unpacked/etc/amfgate/amfgate.json" --check-config
  check "the unit starts the packaged binary on the packaged config" \
    grep -qx 'ExecStart=/usr/bin/amfgate --config /etc/amfgate/amfgate.json' \
    "$unpacked/lib/systemd/system/amfgate.service"
  if command -v systemd-analyze >/dev/null; then
    # Every complaint counts but the binary's absence from this machine's /usr/bin.
    complaints=$(systemd-analyze verify "$unpacked/lib/systemd/system/amfgate.service" 2>&1 |
      grep -v 'Command /usr/bin/amfgate is not executable')
    check "systemd-analyze verify has nothing to say of the unit" test -z "$complaints"
    [ -z "$complaints" ] || echo "$complaints"
  fi
  rm -rf "$unpacked"
fi

# 4. The amfgate-dev package (the test command builds the example against the same tree).
dev=$(ls "$build"/amfgate-dev_*.deb 2>/dev/null | head -1)
check "the -dev .deb was built" test -f "$dev"
if [ -f "$dev" ]; then
  contents=$(dpkg-deb -c "$dev")
  for f in ./usr/include/amfgate/run.hpp ./usr/include/amfgate/service_settings.hpp \
    ./usr/include/amf/value.hpp ./usr/lib/libamf_codec.a ./usr/lib/libamfgate_daemon.a \
    ./usr/lib/cmake/amfgate/amfgateConfig.cmake ./usr/lib/cmake/amfgate/amfgateTargets.cmake; do
    check "-dev .deb holds $f" grep -q " $f\$" <<<"$contents"
  done
  for p in libboost1.81-dev libspdlog-dev nlohmann-json3-dev libhiredis-dev libcrypt-dev libssl-dev; do
    check "-dev .deb depends on $p" bash -c "dpkg-deb -f '$dev' Depends | grep -qw -- '$p'"
  done
  check "both packages have one version" \
    test "$(dpkg-deb -f "$deb" Version)" = "$(dpkg-deb -f "$dev" Version)"
fi

# 5. The python3-amfgate package.
py=$(ls "$build"/python3-amfgate_*.deb 2>/dev/null | head -1)
check "the python3-amfgate .deb was built" test -f "$py"
if [ -f "$py" ]; then
  contents=$(dpkg-deb -c "$py")
  dist=./usr/lib/python3/dist-packages/amfgate
  for f in "$dist/__init__.py" "$dist/_types.py" "$dist/py3amf.py"; do
    check "python3-amfgate .deb holds $f" grep -q " $f\$" <<<"$contents"
  done
  check "python3-amfgate .deb holds the extension" grep -q " $dist/_amfgate\..*\.so\$" <<<"$contents"
  check "python3-amfgate .deb depends on python3 3.11" \
    bash -c "dpkg-deb -f '$py' Depends | grep -q 'python3 (>= 3.11~)'"
  check "python3-amfgate has amfgate's version" \
    test "$(dpkg-deb -f "$deb" Version)" = "$(dpkg-deb -f "$py" Version)"
  unpacked=$(mktemp -d)
  dpkg-deb -x "$py" "$unpacked"
  check "the packaged module imports and round-trips a value" \
    env PYTHONPATH="$unpacked/usr/lib/python3/dist-packages" /usr/bin/python3 -c \
    "import amfgate; assert amfgate.loads(amfgate.dumps({'a': [1.5]})) == {'a': [1.5]}"
  rm -rf "$unpacked"
fi
exit $failed
