"""The Python binding against the xstage command: the same documents for
the same inputs, errors with xstage's messages, the autotune example."""
import json
import os
import re
import subprocess
import sys

import pytest

from conftest import REPO

import xstage

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


@pytest.fixture
def program_file(tmp_path):
    f = tmp_path / "prog.json"
    f.write_text(json.dumps(PROGRAM))
    return str(f)


def test_version():
    assert re.fullmatch(r"\d+\.\d+\.\d+", xstage.version())
    assert xstage.version() == xstage.__version__


def test_profiles_listed():
    names = xstage.profiles()
    assert "h200-nvlink" in names and names == sorted(names)


@pytest.mark.parametrize("model", ["burstgap", "blocking", "serial", "ideal"])
def test_predict_equals_cli(cli, program_file, model):
    want = cli("predict", "--profile", "h200-nvlink", "--program", program_file,
               "--model", model, "--json")["models"][model]
    got = xstage.predict(PROGRAM, "h200-nvlink", model=model)
    assert isinstance(got, xstage.Prediction) and got.model == model
    assert got.to_dict() == want
    assert got.makespan_s == want["makespan_s"] == got["makespan_s"]
    if model == "burstgap":
        assert set(want) == {"makespan_s", "issue_done_s", "workers", "sends", "channels"}
        assert [s.id for s in got.sends] == ["a", "b", "sm1#1"]
        assert [s.xstage_s for s in got.sends] == [s["xstage_s"] for s in want["sends"]]
        assert got.workers[0].name == "sm0"
        assert got.channels[0].peak_backlog_B == want["channels"][0]["peak_backlog_B"]


def test_predict_all_and_list_of_workers(cli, program_file):
    want = cli("predict", "--profile", "h200-nvlink", "--program", program_file,
               "--json")["models"]
    got = xstage.predict(PROGRAM["workers"], "h200-nvlink", model="all")
    assert list(got) == list(want)
    assert {m: p.to_dict() for m, p in got.items()} == want


def test_simulate_equals_cli(cli, program_file):
    want = cli("simulate", "--profile", "h200-nvlink", "--program", program_file,
               "--json")["models"]["sim"]
    assert xstage.simulate(PROGRAM, "h200-nvlink").to_dict() == want
    fifo = xstage.simulate(PROGRAM, "h200-nvlink", arbitration="fifo", packet_B=4096)
    assert fifo.makespan_s > 0 and fifo.model == "sim"


def test_profile_from_dict_equals_builtin(tmp_path):
    builtin = xstage.profile("h200-nvlink")
    d = builtin.to_dict()
    from_dict = xstage.Profile.from_dict(d)
    assert from_dict.name == "h200-nvlink"
    assert {m: p.to_dict() for m, p in xstage.predict(PROGRAM, d, "all").items()} == \
        {m: p.to_dict() for m, p in xstage.predict(PROGRAM, builtin, "all").items()}
    assert xstage.plan_megamoe("glm", d, tokens=256) == \
        xstage.plan_megamoe("glm", "h200-nvlink", tokens=256)
    f = tmp_path / "p.json"
    f.write_text(json.dumps(d))
    assert xstage.predict(PROGRAM, str(f)) == xstage.predict(PROGRAM, "h200-nvlink")
    assert xstage.predict(PROGRAM, f) == xstage.predict(PROGRAM, "h200-nvlink")  # a Path


def test_error_names_the_place():
    bad = {"name": "bad", "workers": [
        {"name": "w", "ops": [{"compute": 1e-6}, {"send": -5}]}]}
    with pytest.raises(ValueError) as e:
        xstage.predict(bad, "h200-nvlink")
    assert isinstance(e.value, xstage.Error) and isinstance(e.value, xstage.InvalidInputError)
    assert e.value.status == "INVALID"
    assert "workers[0].ops[1].send" in e.value.message
    assert re.search(r":\d+:\d+: workers\[0\]\.ops\[1\]", e.value.message)
    assert str(e.value) == e.value.message


def test_errors_of_files_and_profiles():
    with pytest.raises(FileNotFoundError) as e:
        xstage.profile("/no/such/profile.json")
    assert isinstance(e.value, xstage.NotFoundError)
    assert "/no/such/profile.json" in e.value.message
    assert e.value.filename == "/no/such/profile.json" and e.value.errno == 2
    with pytest.raises(ValueError) as e:
        xstage.Profile.from_dict({"name": "x", "channels": {"l": {"drain_Bps": -1}}})
    assert "channels" in e.value.message
    with pytest.raises(ValueError) as e:
        xstage.predict(PROGRAM, "h200-nvlink", model="fastest")
    assert "model" in str(e.value)
    with pytest.raises(ValueError) as e:
        xstage.plan_megamoe("glm", "h200-nvlink", ep=7)
    assert "ep" in e.value.message
    with pytest.raises(ValueError) as e:
        xstage.plan_megamoe({"preset": "glm", "topk": "two"}, "h200-nvlink")
    assert "topk" in e.value.message
    with pytest.raises(ValueError) as e:
        xstage.sweep_megamoe("h200-nvlink", {"presets": ["glm", "nope"]})
    assert "presets[1]" in e.value.message


def test_a_missing_profile_is_a_file_not_found():
    with pytest.raises(FileNotFoundError):
        xstage.plan_megamoe("deepseek-v3", "no-such-profile", tokens=4096)
    with pytest.raises(FileNotFoundError):
        xstage.predict(PROGRAM, "/no/such/dir/profile.json")
    with pytest.raises(FileNotFoundError):
        xstage.predict("/no/such/program.json", "h200-nvlink")
    with pytest.raises(FileNotFoundError):
        xstage.plan_megamoe("no-such-preset", "h200-nvlink")


def test_plan_deepseek_v3_at_4096_tokens(cli):
    """The plan a user asks for first: ints stay ints."""
    got = xstage.plan_megamoe("deepseek-v3", "h200-nvlink", tokens=4096)
    assert isinstance(got, xstage.MoEPlan)
    assert got.config.tokens == 4096 and type(got.config.tokens) is int
    assert type(got.config.ep) is int and type(got["config"]["tokens"]) is int
    assert type(got.recommended.tokens) is int
    # how sure the recommendation is, as the planner says it
    assert isinstance(got.recommended.certainty, dict)
    assert got.recommended.certainty == got["recommended"]["certainty"]
    assert got.to_dict() == cli("plan", "megamoe", "--preset", "deepseek-v3", "--tokens",
                                "4096", "--profile", "h200-nvlink", "--json")
    assert "deepseek-v3" in str(got) and "recommended" in str(got)


def test_plan_megamoe_recommends(cli):
    got = xstage.plan_megamoe("deepseek-v3", "h200-nvlink", tokens=512)
    want = cli("plan", "megamoe", "--preset", "deepseek-v3", "--tokens", "512",
               "--profile", "h200-nvlink", "--json")
    assert got.to_dict() == want
    rec = got.recommended.chosen
    assert rec.schedule in xstage.MOE_SCHEDULES
    assert rec.time_s <= got.recommended.best.time_s * 1.01 + 1e-15
    assert got.schedules[rec.schedule].knobs is not None
    only = xstage.plan_megamoe("deepseek-v3", "h200-nvlink", tokens=512,
                               schedules=["fused-wave"])
    assert only.recommended.chosen.schedule == "fused-wave"
    assert xstage.plan_megamoe("deepseek-v3", "h200-nvlink", tokens=512,
                               schedules="fused-wave") == only


def test_plan_megamoe_table(cli):
    got = xstage.plan_megamoe_table("glm", "h200-nvlink", tokens=[64, 128, 256])
    want = cli("plan", "megamoe", "--preset", "glm", "--profile", "h200-nvlink",
               "--tokens-grid", "64,128,256", "--json")
    assert got.to_dict() == want
    assert [r.tokens for r in got.grid] == [64, 128, 256]
    rng = xstage.plan_megamoe_table("glm", "h200-nvlink", tokens_range=(64, 128))
    assert rng.to_dict() == cli("plan", "megamoe", "--preset", "glm", "--profile",
                                "h200-nvlink", "--tokens-range", "64:128", "--json")


def test_plan_flashattn(cli):
    got = xstage.plan_flashattn("llama3-8b", "h100-nvlink", seq=8192, causal=False)
    want = cli("plan", "flashattn", "--preset", "llama3-8b", "--profile", "h100-nvlink",
               "--seq", "8192", "--full", "--json")
    assert got.to_dict() == want
    assert got.seq == 8192 and type(got.seq) is int and got.causal is False
    t = xstage.plan_flashattn_table("llama3-8b", "h100-nvlink", [4096, 8192])
    assert t.to_dict() == cli("plan", "flashattn", "--preset", "llama3-8b", "--profile",
                              "h100-nvlink", "--seq-grid", "4096,8192", "--json")
    s = xstage.plan_flashattn("llama3-8b", "h100-nvlink", seq=2048, kernel="fa3",
                              sensitivity=True, tolerance=0.02)
    assert s.to_dict() == cli("plan", "flashattn", "--preset", "llama3-8b", "--profile",
                              "h100-nvlink", "--seq", "2048", "--kernel", "fa3",
                              "--sensitivity", "--tolerance", "2%", "--json")
    assert s.recommended["chosen"]["path"] == s["best"] or s.recommended["chosen"]["layout"] \
        != s["layout"]
    assert any(r["param"] == "compute.attn_flops_per_s.fa3" for r in s.sensitivity)
    assert got.sensitivity is None


def test_sweeps(cli, tmp_path):
    grid = {"presets": ["mha"], "seq": [4096, 8192], "cp": [2, 4], "causal": [True]}
    f = tmp_path / "grid.json"
    f.write_text(json.dumps(grid))
    got = xstage.sweep_flashattn("h200-nvlink", grid)
    assert got.to_dict() == cli("sweep", "flashattn", "--profile", "h200-nvlink", "--grid",
                                str(f), "--json")
    assert xstage.sweep_flashattn("h200-nvlink", f) == got
    mgrid = {"presets": ["glm"], "tokens": [64, 512]}
    f.write_text(json.dumps(mgrid))
    assert xstage.sweep_megamoe("h200-nvlink", mgrid).to_dict() == \
        cli("sweep", "megamoe", "--profile", "h200-nvlink", "--grid", str(f), "--json")


def test_validate_megamoe_median(cli):
    data = os.path.join(REPO, "data", "published", "megamoe.csv")
    got = xstage.validate_megamoe(data)
    want = cli("validate", "megamoe", "--data", data, "--json")
    assert got.summary["median_abs_error"] == want["summary"]["median_abs_error"]
    assert got.to_dict() == want
    assert 0 < got.summary["median_abs_error"] < 0.5
    assert len(got.rows) == want["summary"]["rows"]


def test_validate_reads_the_installed_data(cli):
    """No path: the published CSV installed with the package, the same
    document as the command's default."""
    got = xstage.validate_megamoe()
    assert got.to_dict() == cli("validate", "megamoe", "--json")
    assert os.path.exists(xstage.data_file("published/ring-attention.csv"))


def test_validate_flashattn_and_missing_file():
    data = os.path.join(REPO, "data", "published", "ring-attention.csv")
    got = xstage.validate_flashattn(data)
    assert got.summary["rows"] == len(got.rows) > 0
    with pytest.raises(FileNotFoundError) as e:
        xstage.validate_megamoe("/no/such.csv")
    assert e.value.status == "NOTFOUND" and "/no/such.csv" in e.value.message


def test_autotune_example_prints_a_table():
    env = dict(os.environ)
    if os.environ.get("XSTAGE_TEST_INSTALLED") != "1":
        env["PYTHONPATH"] = os.path.join(REPO, "python") + os.pathsep + env.get("PYTHONPATH",
                                                                                  "")
    r = subprocess.run([sys.executable, os.path.join(REPO, "python", "examples", "autotune.py"),
                        "--preset", "glm", "--min", "64", "--max", "256"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "time (us)" in lines[1] and "tokens" in lines[1]
    rows = [l for l in lines if re.match(r"^[ *]\s*\d+\s", l)]
    assert [int(l[1:].split()[0]) for l in rows] == [64, 128, 256]


def test_missing_grid_file_is_a_file_not_found():
    with pytest.raises(FileNotFoundError) as e:
        xstage.sweep_megamoe("h100-nvlink", "/nonexistent/grid.json")
    assert e.value.status == "NOTFOUND"
    assert "/nonexistent/grid.json" in e.value.message


def test_intervals():
    """Every planned time carries its 80% interval, the same the library's
    own call gives (a second way: the schedule's cell times the time)."""
    plan = xstage.plan_megamoe("glm", "h200-nvlink", tokens=64)
    iv = xstage.prediction_interval("megamoe", "sequential", 64)
    s = plan.schedules["sequential"]
    assert s.interval_us == pytest.approx([s.burstgap_s * iv["low"] * 1e6,
                                           s.burstgap_s * iv["high"] * 1e6], rel=1e-9)
    v = plan.recommended.verdict
    assert v["call"] == ("clear" if v["ratio_interval"][0] > 1 else "too close to call")
    assert 0 < iv["low"] < iv["center"] < iv["high"] and iv["level"] == 0.8
    rows = xstage.validate_megamoe().rows
    assert sum(1 for r in rows if r.interval_us) >= 80
    with pytest.raises(xstage.InvalidInputError):
        xstage.prediction_interval("nope", "sequential", 64)
    with pytest.raises(xstage.ArgumentTypeError):
        xstage.prediction_interval("megamoe", 3, 64)
