#!/usr/bin/env bash
# Builds Py3AMF's Cython extension (cpyamf) with Debian's cython3 into a copy of the Py3AMF
# tree: build_cpyamf.sh SHARED_DIR OUT_DIR. OUT_DIR then goes on PYTHONPATH.
set -euo pipefail
shared=$1
out=$2
python=${PYTHON:-/usr/bin/python3}
rm -rf "$out"
mkdir -p "$out"
cp -r "$shared/peers/py3amf/pyamf" "$shared/peers/py3amf/cpyamf" "$out/"
suffix=$("$python" -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
includes=$("$python" -c "import sysconfig; print(sysconfig.get_paths()['include'])")
for module in util codec amf0 amf3; do
  # Its warnings (cdef methods overridden by def) are Py3AMF's; shown only if cython fails.
  cython3 -3 -I "$out" "$out/cpyamf/$module.pyx" -o "$out/cpyamf/$module.c" 2>"$out/cython.log" ||
    { cat "$out/cython.log" >&2; exit 1; }
  gcc -O2 -shared -fPIC -w -I"$includes" "$out/cpyamf/$module.c" -o "$out/cpyamf/$module$suffix"
done
