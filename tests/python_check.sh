#!/bin/sh
# python_check.sh install SRC BUILD: the Python package installed the way a
# user without a package index installs it, from a clone of SRC:
#   1. a copy of the tree as a clone holds it (the files git tracks, and the
#      untracked ones it does not ignore) in BUILD/python-clone;
#   2. a fresh venv, BUILD/pyvenv: python3 -m venv --system-site-packages,
#      over a python3 whose site has setuptools, wheel and pytest (Debian's);
#   3. pyvenv/bin/pip install --no-build-isolation --no-index python-clone,
#      which builds libxstage with CMake and installs the package, the
#      command and share/xstage into the venv.
# python_check.sh test SRC BUILD: pytest SRC/python/tests with the venv's
# python, from a folder outside the tree, against that install
# (XSTAGE_TEST_INSTALLED=1: the tests refuse a package imported from SRC).
# Exit 77 (skipped) when no such python3 is found, or (test) no venv was
# made.
set -eu
step=$1 src=$(cd "$2" && pwd) build=$(cd "$3" && pwd)
venv=$build/pyvenv clone=$build/python-clone
say() { printf 'python_check: %s\n' "$*"; }

if [ "$step" = test ]; then
    [ -x "$venv/bin/python" ] || { say "skipped: no venv (the python_install test made none)"; exit 77; }
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT INT TERM
    cd "$tmp"
    exec env -u PYTHONPATH -u XSTAGE_LIBRARY -u XSTAGE_CLI XSTAGE_TEST_INSTALLED=1 \
        XSTAGE_SRC="$src" PYTHONDONTWRITEBYTECODE=1 \
        "$venv/bin/python" -m pytest -q -p no:cacheprovider "$src/python/tests"
fi

# Debian's python3 first: its site holds python3-setuptools, -wheel, -pytest
py=""
for cand in /usr/bin/python3 python3; do
    command -v "$cand" >/dev/null 2>&1 || continue
    if "$cand" -c "import venv, ensurepip, setuptools, wheel, pytest" >/dev/null 2>&1; then
        py=$(command -v "$cand")
        break
    fi
done
if [ -z "$py" ]; then
    rm -rf "$venv"
    say "skipped: no python3 with venv, setuptools, wheel and pytest (Debian: apt-get install" \
        "python3-venv python3-setuptools python3-wheel python3-pytest)"
    exit 77
fi

rm -rf "$clone" "$venv"
mkdir -p "$clone"
"$py" - "$src" "$clone" <<'EOF'
import os, shutil, subprocess, sys
src, dest = sys.argv[1], sys.argv[2]
try:
    out = subprocess.run(["git", "-C", src, "ls-files", "-z", "--cached", "--others",
                          "--exclude-standard"], capture_output=True, check=True).stdout
    files = [f for f in out.decode().split("\0") if f]
except (OSError, subprocess.CalledProcessError):  # not a git checkout: all but builds
    files = [os.path.relpath(os.path.join(d, f), src) for d, dirs, fs in os.walk(src)
             for f in fs if not os.path.relpath(d, src).startswith(("build", ".git"))]
n = 0
for f in files:
    p = os.path.join(src, f)
    if os.path.isfile(p) and not os.path.islink(p):
        os.makedirs(os.path.dirname(os.path.join(dest, f)), exist_ok=True)
        shutil.copy2(p, os.path.join(dest, f))
        n += 1
print("python_check: %d files of %s copied to %s" % (n, src, dest))
EOF
"$py" -m venv --system-site-packages "$venv"
log=$build/python-install.log
if ! env -u PYTHONPATH JOBS="${JOBS:-2}" "$venv/bin/pip" install --no-build-isolation \
        --no-index --disable-pip-version-check "$clone" >"$log" 2>&1; then
    tail -40 "$log"
    say "pip install --no-build-isolation failed (the whole log: $log)"
    exit 1
fi
ver=$(cd / && env -u PYTHONPATH -u XSTAGE_LIBRARY "$venv/bin/python" -c \
    'import xstage; print(xstage.__version__, xstage.library_path())')
say "installed into $venv with $py: xstage $ver"
