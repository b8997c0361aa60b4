#!/bin/sh
# gpu-deps.sh: fetch, here, the Debian packages that building xstage needs
# and a bare GPU machine may lack (jansson, cmocka, pkg-config), into
# .devdeps/ (ignored by git). scripts/gpu-check.sh unpacks them under /tmp
# there when the machine has no jansson of its own; nothing is installed.
# For a machine that can fetch nothing: pass .devdeps along with the tree.
set -eu
cd "$(dirname "$0")/.."
mkdir -p .devdeps
cd .devdeps
rm -f ./*.deb
apt-get download libjansson4 libjansson-dev libcmocka0 libcmocka-dev \
  pkgconf pkgconf-bin libpkgconf3 pkg-config 2>&1 | grep -v "^W: Download is performed unsandboxed" >&2 || true
n=$(ls ./*.deb 2>/dev/null | wc -l)
[ "$n" -ge 8 ] || { echo "gpu-deps.sh: fetched $n of 8 packages (apt-get update first?)" >&2; exit 1; }
ls ./*.deb
