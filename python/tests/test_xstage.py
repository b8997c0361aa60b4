"""The Python binding against the xstage command: the same documents for
the same inputs, errors with xstage's messages, the autotune example."""
import ctypes
import json
import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "python"))

import xstage  # noqa: E402

PROGRAM = {
    "name": "two bursts and a wait",
    "workers": [
        {"name": "sm0", "ops": [
            {"send": 4000000, "id": "a"},
            {"compute": 1e-3},
            {"send": 1000000, "id": "b"},
            {"wait": "b"},
            {"fence": True}]},
        {"name": "sm1", "ops": [
            {"compute": 2e-4},
            {"send": 262144},
            {"wait": "a"}]},
    ],
}


def cli_path():
    p = os.environ.get("XSTAGE_CLI")
    if p:
        return p
    p = os.path.join(os.path.dirname(xstage.library_path()), "xstage")
    return p if os.path.exists(p) else None


@pytest.fixture(scope="module")
def cli():
    p = cli_path()
    if not p:
        pytest.skip("no xstage command found (set XSTAGE_CLI)")

    def run(*args):
        r = subprocess.run([p] + list(args), cwd=REPO, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)
    return run


@pytest.fixture
def program_file(tmp_path):
    f = tmp_path / "prog.json"
    f.write_text(json.dumps(PROGRAM))
    return str(f)


def test_version():
    assert re.fullmatch(r"\d+\.\d+\.\d+", xstage.version())


def test_profiles_listed():
    names = xstage.profiles()
    assert "h200-nvlink" in names and names == sorted(names)


@pytest.mark.parametrize("model", ["burstgap", "blocking", "serial", "ideal"])
def test_predict_equals_cli(cli, program_file, model):
    want = cli("predict", "--profile", "h200-nvlink", "--program", program_file,
               "--model", model, "--json")["models"][model]
    got = xstage.predict(PROGRAM, "h200-nvlink", model=model)
    assert got == want
    if model == "burstgap":
        assert set(got) == {"makespan_s", "issue_done_s", "workers", "sends", "channels"}
        assert [s["id"] for s in got["sends"]] == ["a", "b", "sm1#1"]


def test_predict_all_and_list_of_workers(cli, program_file):
    want = cli("predict", "--profile", "h200-nvlink", "--program", program_file,
               "--json")["models"]
    got = xstage.predict(PROGRAM["workers"], "h200-nvlink", model="all")
    assert got == want


def test_simulate_equals_cli(cli, program_file):
    want = cli("simulate", "--profile", "h200-nvlink", "--program", program_file,
               "--json")["models"]["sim"]
    assert xstage.simulate(PROGRAM, "h200-nvlink") == want
    fifo = xstage.simulate(PROGRAM, "h200-nvlink", arbitration="fifo", packet_B=4096)
    assert fifo["makespan_s"] > 0


def test_profile_from_dict_equals_builtin(tmp_path):
    builtin = xstage.profile("h200-nvlink")
    d = builtin.to_dict()
    from_dict = xstage.Profile.from_dict(d)
    assert from_dict.name == "h200-nvlink"
    assert xstage.predict(PROGRAM, d, "all") == xstage.predict(PROGRAM, builtin, "all")
    assert xstage.plan_megamoe("glm", d, tokens=256) == \
        xstage.plan_megamoe("glm", "h200-nvlink", tokens=256)
    f = tmp_path / "p.json"
    f.write_text(json.dumps(d))
    assert xstage.predict(PROGRAM, str(f)) == xstage.predict(PROGRAM, "h200-nvlink")


def test_error_names_the_place():
    bad = {"name": "bad", "workers": [
        {"name": "w", "ops": [{"compute": 1e-6}, {"send": -5}]}]}
    with pytest.raises(xstage.Error) as e:
        xstage.predict(bad, "h200-nvlink")
    assert e.value.status == "INVALID"
    assert "workers[0].ops[1].send" in e.value.message
    assert re.search(r":\d+:\d+: workers\[0\]\.ops\[1\]", e.value.message)
    assert isinstance(e.value, Exception)


def test_errors_of_files_and_profiles():
    with pytest.raises(xstage.Error) as e:
        xstage.profile("/no/such/profile.json")
    assert "/no/such/profile.json" in e.value.message
    with pytest.raises(xstage.Error) as e:
        xstage.Profile.from_dict({"name": "x", "channels": {"l": {"drain_Bps": -1}}})
    assert "channels" in e.value.message
    with pytest.raises(xstage.Error) as e:
        xstage.predict(PROGRAM, "h200-nvlink", model="fastest")
    with pytest.raises(xstage.Error) as e:
        xstage.plan_megamoe("glm", "h200-nvlink", ep=7)
    assert "ep" in e.value.message
    with pytest.raises(xstage.Error) as e:
        xstage.plan_megamoe({"preset": "glm", "topk": "two"}, "h200-nvlink")
    assert "topk" in e.value.message
    with pytest.raises(xstage.Error) as e:
        xstage.sweep_megamoe("h200-nvlink", {"presets": ["glm", "nope"]})
    assert "presets[1]" in e.value.message


def test_plan_megamoe_recommends(cli):
    got = xstage.plan_megamoe("deepseek-v3", "h200-nvlink", tokens=512)
    want = cli("plan", "megamoe", "--preset", "deepseek-v3", "--tokens", "512",
               "--profile", "h200-nvlink", "--json")
    assert got == want
    rec = got["recommended"]["chosen"]
    assert rec["schedule"] in xstage.MOE_SCHEDULES
    assert rec["time_s"] <= got["recommended"]["best"]["time_s"] * 1.01 + 1e-15
    only = xstage.plan_megamoe("deepseek-v3", "h200-nvlink", tokens=512,
                               schedules=["fused-wave"])
    assert only["recommended"]["chosen"]["schedule"] == "fused-wave"


def test_plan_megamoe_table(cli):
    got = xstage.plan_megamoe_table("glm", "h200-nvlink", tokens=[64, 128, 256])
    want = cli("plan", "megamoe", "--preset", "glm", "--profile", "h200-nvlink",
               "--tokens-grid", "64,128,256", "--json")
    assert got == want


def test_plan_flashattn(cli):
    got = xstage.plan_flashattn("llama3-8b", "h100-nvlink", seq=8192, causal=False)
    want = cli("plan", "flashattn", "--preset", "llama3-8b", "--profile", "h100-nvlink",
               "--seq", "8192", "--full", "--json")
    assert got == want
    t = xstage.plan_flashattn_table("llama3-8b", "h100-nvlink", [4096, 8192])
    assert t == cli("plan", "flashattn", "--preset", "llama3-8b", "--profile",
                    "h100-nvlink", "--seq-grid", "4096,8192", "--json")


def test_sweeps(cli, tmp_path):
    grid = {"presets": ["mha"], "seq": [4096, 8192], "cp": [2, 4], "causal": [True]}
    f = tmp_path / "grid.json"
    f.write_text(json.dumps(grid))
    assert xstage.sweep_flashattn("h200-nvlink", grid) == \
        cli("sweep", "flashattn", "--profile", "h200-nvlink", "--grid", str(f), "--json")
    mgrid = {"presets": ["glm"], "tokens": [64, 512]}
    f.write_text(json.dumps(mgrid))
    assert xstage.sweep_megamoe("h200-nvlink", mgrid) == \
        cli("sweep", "megamoe", "--profile", "h200-nvlink", "--grid", str(f), "--json")


def test_validate_megamoe_median(cli):
    data = os.path.join(REPO, "data", "published", "megamoe.csv")
    got = xstage.validate_megamoe(data)
    want = cli("validate", "megamoe", "--data", data, "--json")
    assert got["summary"]["median_abs_error"] == want["summary"]["median_abs_error"]
    assert got == want
    assert 0 < got["summary"]["median_abs_error"] < 0.5


def test_validate_flashattn_and_missing_file():
    data = os.path.join(REPO, "data", "published", "ring-attention.csv")
    got = xstage.validate_flashattn(data)
    assert got["summary"]["rows"] == len(got["rows"]) > 0
    with pytest.raises(xstage.Error) as e:
        xstage.validate_megamoe("/no/such.csv")
    assert e.value.status == "IO"


def test_autotune_example_prints_a_table():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(REPO, "python") + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, os.path.join(REPO, "python", "examples", "autotune.py"),
                        "--preset", "glm", "--min", "64", "--max", "256"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "time (us)" in lines[1] and "tokens" in lines[1]
    rows = [l for l in lines if re.match(r"^[ *]\s*\d+\s", l)]
    assert [int(l[1:].split()[0]) for l in rows] == [64, 128, 256]


def test_library_lookup_message(tmp_path):
    """With nothing to load, the import says where it looked."""
    env = dict(os.environ)
    env.pop("XSTAGE_LIBRARY", None)
    # a copy of the package away from the build tree
    pkg = tmp_path / "site" / "xstage"
    pkg.mkdir(parents=True)
    src = os.path.join(REPO, "python", "xstage", "__init__.py")
    (pkg / "__init__.py").write_text(open(src).read())
    env["PYTHONPATH"] = str(tmp_path / "site")
    env["LD_LIBRARY_PATH"] = ""
    r = subprocess.run([sys.executable, "-c", "import xstage"], capture_output=True,
                       text=True, env=env, cwd=str(tmp_path))
    if r.returncode == 0:
        pytest.skip("an installed libxstage was found")
    assert "ImportError" in r.stderr
    assert "XSTAGE_LIBRARY" in r.stderr and "build tree" in r.stderr


def test_struct_mirrors_match_the_library():
    # the import already checked them; the check itself must be able to fail
    assert xstage._xs_struct_size(b"xs_moe_config") == ctypes.sizeof(xstage._MoeConfig)
    assert xstage._xs_struct_size(b"xs_fa_config") == ctypes.sizeof(xstage._FaConfig)
    assert xstage._xs_struct_size(b"no_such_struct") == 0


def test_xstage_library_set_means_that_library():
    env = dict(os.environ, XSTAGE_LIBRARY="/nonexistent/libxstage.so")
    r = subprocess.run([sys.executable, "-c", "import xstage"], env=env,
                       capture_output=True, text=True,
                       cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert r.returncode != 0
    assert "XSTAGE_LIBRARY=/nonexistent/libxstage.so cannot be loaded" in r.stderr


def test_missing_grid_file_is_an_xstage_error():
    with pytest.raises(xstage.Error) as e:
        xstage.sweep_megamoe("h100-nvlink", "/nonexistent/grid.json")
    assert e.value.status == "IO"
    assert "/nonexistent/grid.json" in e.value.message
