#!/bin/sh
# fetch-cuobjdump.sh [DIR]: put a cuobjdump that reads CUDA 13's sm_90
# cubins (and the nvdisasm it runs) in DIR/bin (default .cache/cuda-tools), for
# tests/sass_check.sh.
#
# CUDA 13's toolkit on this project's machines has nvcc and ptxas but no
# cuobjdump, and Debian 12's (CUDA 11.8) refuses CUDA 13 cubins. Debian 13's
# nvidia-cuda-toolkit (CUDA 12.4, non-free) reads them. The package is
# downloaded from Debian's archive and only unpacked, not installed: apt
# works on a list of its own under DIR, so the machine's sources, lists and
# packages are left as they were. Prints the path; exit 1 when it cannot.
set -eu
cd "$(dirname "$0")/.."
dir=${1:-.cache/cuda-tools}
if [ -x "$dir/bin/cuobjdump" ] && [ -x "$dir/bin/nvdisasm" ]; then
  echo "$dir/bin/cuobjdump"; exit 0
fi
mkdir -p "$dir/apt/lists/partial" "$dir/apt/cache/archives/partial" "$dir/bin"
dir=$(cd "$dir" && pwd)
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie non-free" \
    > "$dir/apt/sources.list"
apt_opts="-o Dir::Etc::sourcelist=$dir/apt/sources.list -o Dir::Etc::sourceparts=-
  -o Dir::State::Lists=$dir/apt/lists -o Dir::Cache=$dir/apt/cache -o APT::Get::List-Cleanup=0
  -o Debug::NoDropPrivs=1 -o APT::Sandbox::User=root"
# shellcheck disable=SC2086
timeout 300 apt-get -q $apt_opts update >&2
# shellcheck disable=SC2086
(cd "$dir/apt" && timeout 300 apt-get -q $apt_opts download nvidia-cuda-toolkit >&2)
deb=$(ls "$dir"/apt/nvidia-cuda-toolkit_*.deb | head -1)
rm -rf "$dir/unpacked"
dpkg-deb -x "$deb" "$dir/unpacked"
# cuobjdump -sass runs nvdisasm, which it looks for beside itself
cp "$dir/unpacked/usr/bin/nvdisasm" "$dir/unpacked/usr/bin/cuobjdump" "$dir/bin/"
rm -rf "$dir/unpacked" "$deb"
"$dir/bin/cuobjdump" --version >&2
echo "$dir/bin/cuobjdump"
