#!/bin/sh
# python_check.sh SRC: the Python binding's tests (python/tests), run as
# `python3 -m pytest -q SRC/python/tests` with XSTAGE_LIBRARY and XSTAGE_CLI
# from the environment (ctest sets them to the built library and command).
# Exit 77 (skipped) when no python3 with pytest is found: python3 first,
# then Debian's /usr/bin/python3 (python3-pytest) where python3 is another.
src=$1
tried=""
for py in python3 /usr/bin/python3; do
    command -v "$py" >/dev/null 2>&1 || continue
    if "$py" -c "import pytest" >/dev/null 2>&1; then
        exec "$py" -m pytest -q -p no:cacheprovider "$src/python/tests"
    fi
    tried="$tried $(command -v "$py")"
done
if [ -z "$tried" ]; then
    echo "python_check: skipped: no python3 found (Debian: apt-get install python3 python3-pytest)"
else
    echo "python_check: skipped: no pytest for$tried (Debian: apt-get install python3-pytest)"
fi
exit 77
