"""Where the package finds its library and data, and what it says when the
library it finds is not one it can use: another version named, never an
AttributeError on first use."""
import ctypes
import os
import shutil
import subprocess
import sys

import pytest

import xstage
from xstage import _lib

from conftest import INSTALLED


def run_import(tmp_path, env_extra, pkg=None):
    env = {k: v for k, v in os.environ.items() if k not in ("XSTAGE_LIBRARY", "PYTHONPATH")}
    env.update(env_extra)
    env["PYTHONPATH"] = pkg or os.path.dirname(os.path.dirname(xstage.__file__))
    return subprocess.run([sys.executable, "-c", "import xstage; print(xstage.library_path())"],
                          capture_output=True, text=True, env=env, cwd=str(tmp_path))


@pytest.mark.skipif(not INSTALLED, reason="the installed package only (ctest's python test)")
def test_installed_layout():
    """pip put the library in the package, the command in bin/ and the
    data in share/xstage of the environment."""
    pkg = os.path.dirname(xstage.__file__)
    assert os.path.dirname(xstage.library_path()) == pkg
    assert os.path.basename(xstage.library_path()).startswith("libxstage.so.")
    assert xstage.data_dir() == os.path.join(sys.prefix, "share", "xstage")
    cmd = os.path.join(os.path.dirname(sys.executable), "xstage")
    r = subprocess.run([cmd, "validate", "flashattn"], capture_output=True, text=True, cwd="/")
    assert r.returncode == 0, r.stderr
    assert " of %s/share/xstage/published/ring-attention.csv," % os.path.realpath(sys.prefix) \
        in r.stdout.splitlines()[0]


def fake_library(tmp_path, version, with_free):
    """A shared library that says it is libxstage VERSION (and has xs_free
    or not), built here with the C compiler."""
    cc = shutil.which(os.environ.get("CC", "cc"))
    if not cc:
        pytest.skip("no C compiler")
    src = tmp_path / "old.c"
    src.write_text('const char *xs_version(void) { return "%s"; }\n' % version +
                   ("void xs_free(void *p) { (void)p; }\n" if with_free else ""))
    out = tmp_path / ("libold-%s.so" % version)
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(out), str(src)], check=True)
    return str(out)


def test_an_older_library_is_named_with_both_versions(tmp_path):
    old = fake_library(tmp_path, "0.1.0", True)
    r = run_import(tmp_path, {"XSTAGE_LIBRARY": old})
    assert r.returncode != 0
    assert "ImportError" in r.stderr and "AttributeError" not in r.stderr
    assert "libxstage 0.1.0" in r.stderr and "(%s)" % xstage.__version__ in r.stderr
    assert "needs libxstage %d.%d.x" % _lib.WANT in r.stderr


def test_a_library_without_a_function_is_named_with_both_versions(tmp_path):
    """The right version number, but a function missing (another build)."""
    lib = fake_library(tmp_path, xstage.__version__, False)
    r = run_import(tmp_path, {"XSTAGE_LIBRARY": lib})
    assert r.returncode != 0 and "AttributeError" not in r.stderr
    assert "has no xs_free, which this xstage package (%s) calls" % xstage.__version__ \
        in r.stderr
    assert "(libxstage %s)" % xstage.__version__ in r.stderr


def test_an_older_library_found_on_the_way_is_passed_over(tmp_path):
    """An old libxstage in an install prefix is skipped, and said so when
    nothing else is found."""
    site = tmp_path / "prefix" / "lib" / "python3" / "site-packages"
    pkg = site / "xstage"
    shutil.copytree(os.path.dirname(xstage.__file__), str(pkg),
                    ignore=shutil.ignore_patterns("libxstage.so*", "__pycache__"))
    old = fake_library(tmp_path, "0.1.0", True)
    shutil.copy(old, str(tmp_path / "prefix" / "lib" / "libxstage.so"))
    r = run_import(tmp_path, {"LD_LIBRARY_PATH": ""}, str(site))
    if r.returncode == 0:
        pytest.skip("another libxstage was found: %s" % r.stdout.strip())
    assert "libxstage.so (libxstage 0.1.0; this xstage package" in r.stderr
    assert "XSTAGE_LIBRARY" in r.stderr and "build tree" in r.stderr


def test_xstage_library_set_means_that_library(tmp_path):
    r = run_import(tmp_path, {"XSTAGE_LIBRARY": "/nonexistent/libxstage.so"})
    assert r.returncode != 0
    assert "XSTAGE_LIBRARY=/nonexistent/libxstage.so cannot be loaded" in r.stderr


def test_struct_mirrors_match_the_library():
    # the import already checked them; the check itself must be able to fail
    assert _lib.xs_struct_size(b"xs_moe_config") == ctypes.sizeof(_lib.MoeConfig)
    assert _lib.xs_struct_size(b"xs_fa_config") == ctypes.sizeof(_lib.FaConfig)
    assert _lib.xs_struct_size(b"no_such_struct") == 0


def test_data_files():
    assert xstage.data_file("published/megamoe.csv").endswith("megamoe.csv")
    assert os.path.exists(xstage.data_file("examples/hol.json"))
    with pytest.raises(FileNotFoundError):
        xstage.data_file("published/no-such.csv")
    with pytest.raises(TypeError):
        xstage.data_file(None)
