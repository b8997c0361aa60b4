"""Hostile inputs to the package: files it reads itself bounded as the
command bounds them, and numbers read and written with a point under a
host program's comma-decimal locale."""
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import xstage


def test_read_bounded(tmp_path):
    """/dev/zero as a config grew the process to 24 GB until the OOM
    killer took it: now at most 64 MiB and one byte are read."""
    for call in (lambda: xstage.plan_megamoe("/dev/zero", "h800-nvlink"),
                 lambda: xstage.validate_megamoe("/dev/zero"),
                 lambda: xstage.sweep_megamoe("h800-nvlink", "/dev/zero")):
        with pytest.raises(xstage.Error) as e:
            call()
        assert isinstance(e.value, ValueError)
        assert "/dev/zero: larger than the limit of 64 MiB" in e.value.message
    big = tmp_path / "big.csv"
    with open(big, "wb") as f:
        f.truncate((64 << 20) + 1)  # sparse: one byte past the limit
    with pytest.raises(xstage.Error) as e:
        xstage.validate_megamoe(str(big))
    assert "larger than the limit of 64 MiB" in e.value.message


def _locale_dir(tmp_path_factory):
    """de_DE.UTF-8 and tr_TR.UTF-8 compiled into a folder (glibc finds
    them through LOCPATH): Debian's locales package has their sources."""
    if not shutil.which("localedef") or not os.path.isdir("/usr/share/i18n/locales"):
        pytest.skip("no localedef or locale sources (Debian: the locales package)")
    d = tmp_path_factory.mktemp("locales")
    for name, src in (("de_DE.UTF-8", "de_DE"), ("tr_TR.UTF-8", "tr_TR")):
        r = subprocess.run(["localedef", "-i", src, "-f", "UTF-8", str(d / name)],
                           capture_output=True, text=True)
        assert (d / name).is_dir(), r.stderr
    return str(d)


@pytest.fixture(scope="module")
def locales(tmp_path_factory):
    return _locale_dir(tmp_path_factory)


# what the child prints under C, then under the locale: the two must agree
CHILD = textwrap.dedent("""
    import ctypes, json, locale, sys
    import xstage
    def run():
        v = xstage.validate_megamoe()
        s = v.to_dict()["summary"]
        t = xstage.Tuner("deepseek-v3", "h200-nvlink", tokens=[128])
        c = t.choose(128)
        t.observe(128, c, c["predicted_s"] * 1.5)
        try:
            xstage.Tuner("deepseek-v3", "h200-nvlink", tokens=[128], noise=2.5)
        except xstage.Error as e:
            bad = e.message
        lib = ctypes.CDLL(xstage.library_path())
        lib.xs_format_time.restype = ctypes.c_char_p
        buf = ctypes.create_string_buffer(64)
        shown = lib.xs_format_time(ctypes.c_double(1.5e-6), buf, 64).decode()
        return [s["rows"], round(s["median_abs_error"], 12), round(t.term("hbm", 128)[0], 12),
                bad, shown]
    before = run()
    locale.setlocale(locale.LC_ALL, sys.argv[1])
    assert locale.localeconv()["decimal_point"] == ",", locale.localeconv()
    after = run()
    print(json.dumps([before, after]))
""")


@pytest.mark.parametrize("name", ["de_DE.UTF-8", "tr_TR.UTF-8"])
def test_comma_locale(locales, name, tmp_path):
    """A host program that sets a comma-decimal locale: validate_megamoe()
    read the project's own CSV as 'expected microseconds from 0,001 to
    1e+12, got "225.0"'; now every figure, message and formatted number
    is the same as under C."""
    env = dict(os.environ, LOCPATH=locales,
               PYTHONPATH=os.path.dirname(os.path.dirname(xstage.__file__)))
    r = subprocess.run([sys.executable, "-c", CHILD, name], capture_output=True, text=True,
                       env=env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr[-2000:]
    before, after = json.loads(r.stdout)
    assert before == after
    assert "expected 0 (the default) to 1, got 2.5" in after[3]
    assert after[4] == "1.50 us"


# the locale set before the library's first call: the plan's intervals
CHILD_FIRST = textwrap.dedent("""
    import json, locale, sys
    if sys.argv[1] != "C":
        locale.setlocale(locale.LC_ALL, sys.argv[1])
    import xstage
    p = xstage.plan_megamoe("deepseek-v3", "h200-nvlink", tokens=64).to_dict()
    print(json.dumps([p["schedules"][s]["interval_us"] for s in sorted(p["schedules"])]))
""")


@pytest.mark.parametrize("name", ["de_DE.UTF-8", "tr_TR.UTF-8"])
def test_comma_locale_first(locales, name, tmp_path):
    """A host program that sets a comma-decimal locale before its first
    plan: the built-in residual table, read at the first interval asked
    for, took "0.5" for 0 with ".5" left over and was refused
    ('residuals:7: expected kind,family,...'), so every plan came without
    intervals (null); now they are those of the C locale."""
    env = dict(os.environ, LOCPATH=locales,
               PYTHONPATH=os.path.dirname(os.path.dirname(xstage.__file__)))
    out = []
    for loc in ("C", name):
        r = subprocess.run([sys.executable, "-c", CHILD_FIRST, loc], capture_output=True,
                           text=True, env=env, cwd=str(tmp_path))
        assert r.returncode == 0, r.stderr[-2000:]
        out.append(json.loads(r.stdout))
    assert out[0] == out[1] and len(out[0]) == 7
