"""What the tests share: where the source tree and the xstage command are,
and, when ctest runs them (XSTAGE_TEST_INSTALLED=1), the check that the
package under test is the one pip installed, not the source tree's.

Run from a source tree without installing:
    PYTHONPATH=python python3 -m pytest -q python/tests
"""
import json
import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.environ.get("XSTAGE_SRC") or os.path.normpath(os.path.join(HERE, "..", ".."))

import xstage  # noqa: E402

INSTALLED = os.environ.get("XSTAGE_TEST_INSTALLED") == "1"
if INSTALLED:
    pkg = os.path.realpath(os.path.dirname(xstage.__file__))
    tree = os.path.realpath(os.path.join(REPO, "python"))
    if pkg.startswith(tree + os.sep):
        raise RuntimeError("testing the installed package, but xstage was imported from the "
                           "source tree (%s): unset PYTHONPATH" % pkg)


def cli_path():
    """The xstage command beside this Python (a venv's bin), XSTAGE_CLI,
    or the build tree's."""
    for p in (os.environ.get("XSTAGE_CLI"),
              os.path.join(os.path.dirname(sys.executable), "xstage"),
              os.path.join(REPO, "build", "xstage")):
        if p and os.path.exists(p):
            return p
    return shutil.which("xstage")


@pytest.fixture(scope="session")
def repo():
    return REPO


@pytest.fixture(scope="session")
def cli():
    p = cli_path()
    if not p:
        pytest.skip("no xstage command found (set XSTAGE_CLI)")

    def run(*args):
        r = subprocess.run([p] + list(args), cwd=REPO, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)
    run.path = p
    return run
