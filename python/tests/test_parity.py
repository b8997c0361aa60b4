"""What the command does, the package does: a fabric and an EP library on
the MegaMoE planner and sweep, validate ep, fit megamoe, and results whose
str() is the command's short report; each checked against a second way of
getting the same document."""
import csv
import io
import os
import statistics
import subprocess
import sys

import pytest

from conftest import REPO, cli_path

import xstage

GRID = {"presets": ["deepseek-v3"], "tokens": [128], "ep": [16, 32]}


def test_fabric_as_the_command_takes_it():
    # the done-when: DeepSeek-V3 at EP 32 on H800 over InfiniBand
    p = xstage.plan_megamoe("deepseek-v3", "h800-nvlink", tokens=128, ep=32, fabric="ib-400")
    assert p.profile == "h800-nvlink+ib-400" and p.config.ep == 32
    assert p.recommended.chosen.kernel is not None
    # the same plan as the profile GPU+FABRIC names it, and as a fabric
    # given as a Profile
    same = xstage.plan_megamoe("deepseek-v3", "h800-nvlink+ib-400", tokens=128, ep=32)
    assert same.to_dict() == p.to_dict()
    by_object = xstage.plan_megamoe("deepseek-v3", xstage.profile("h800-nvlink"), tokens=128,
                                    ep=32, fabric=xstage.profile("ib-400"))
    assert by_object.to_dict() == p.to_dict()
    # and as the command prints it
    out = subprocess.run([cli_path(), "plan", "megamoe", "--preset", "deepseek-v3", "--profile",
                          "h800-nvlink", "--tokens", "128", "--ep", "32", "--fabric", "ib-400",
                          "--json"], capture_output=True, text=True, check=True).stdout
    import json
    assert json.loads(out) == p.to_dict()
    # an EP past the node without one is refused naming fabric; an unknown
    # fabric names the three
    with pytest.raises(xstage.InvalidInputError) as e:
        xstage.plan_megamoe("deepseek-v3", "h800-nvlink", tokens=128, ep=32)
    assert "--fabric" in e.value.message
    with pytest.raises(xstage.NotFoundError) as e:
        xstage.plan_megamoe("deepseek-v3", "h800-nvlink", ep=32, fabric="ib400")
    assert "not a built-in fabric (efa-400, ib-400, roce-200)" in e.value.message


def test_ep_library():
    base = xstage.plan_megamoe("deepseek-v3", "h200-nvlink", tokens=256)
    v1 = xstage.plan_megamoe("deepseek-v3", "h200-nvlink", tokens=256, ep_library="deepep-v1")
    # only the sequential arm's all-to-all changes
    assert v1.schedules["sequential"].burstgap_s != base.schedules["sequential"].burstgap_s
    assert v1.schedules["fused-lag"].burstgap_s == base.schedules["fused-lag"].burstgap_s
    # as a config that names it
    cfg = xstage.plan_megamoe({"preset": "deepseek-v3", "ep_library": "deepep-v1"},
                              "h200-nvlink", tokens=256)
    assert cfg.to_dict()["schedules"] == v1.to_dict()["schedules"]
    with pytest.raises(xstage.InvalidInputError) as e:
        xstage.plan_megamoe("deepseek-v3", "h200-nvlink", ep_library="deepep-v9")
    assert "ep_library" in e.value.message
    with pytest.raises(xstage.InvalidInputError):
        xstage.plan_megamoe("deepseek-v3", "h200-nvlink", ep_kernel="fast")


def test_sweep_with_fabric_and_library():
    s = xstage.sweep_megamoe("h800-nvlink", GRID, fabric="ib-400", ep_library="deepep-v1")
    assert [c["ep"] for c in s.configs] == [16, 32]
    for c in s.configs:
        p = xstage.plan_megamoe("deepseek-v3", "h800-nvlink", tokens=128, ep=c["ep"],
                                fabric="ib-400", ep_library="deepep-v1")
        assert c["schedules"]["sequential"]["burstgap_s"] == pytest.approx(
            p.schedules["sequential"].burstgap_s, rel=1e-9)
    with pytest.raises(xstage.InvalidInputError):
        xstage.sweep_megamoe("h800-nvlink", GRID)  # EP 16 past the node, no fabric


def test_validate_ep():
    v = xstage.validate_ep()
    assert len(v.rows) == 325 and isinstance(v.rows[0].tokens, int)
    # the summary's median, the rows' |error| median by hand
    assert v.summary["median_abs_error"] == pytest.approx(
        statistics.median(abs(r.error) for r in v.rows), rel=1e-9)
    # the document the command prints
    out = subprocess.run([cli_path(), "validate", "ep", "--json"], capture_output=True,
                         text=True, check=True).stdout
    import json
    assert json.loads(out) == v.to_dict()
    assert "deepep-v1/normal" in str(v) and "median |error|" in str(v)
    with pytest.raises(xstage.InvalidInputError):
        xstage.validate_ep(models=["fast"])


def test_validate_ep_by_source(tmp_path):
    # two sources of the published file: each left out in turn
    rows = list(csv.reader(open(os.path.join(REPO, "data", "published", "ep.csv"))))
    head = next(i for i, r in enumerate(rows) if r and not r[0].startswith("#"))
    keep = [r for r in rows[head + 1:] if r and r[0].startswith(("uccl", "ppl-ai"))]
    f = tmp_path / "two.csv"
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows([rows[head]] + keep)
    f.write_text(buf.getvalue())
    v = xstage.validate_ep(f, by_source=True, models="all")
    assert all("loso" in r.extra for r in v.rows)
    consts = v.summary["fitted_constants"]
    assert len(consts) == 5 and all(len(c["without_source"]) == 2 for c in consts)
    assert set(v.summary["by_model"]) == set(xstage.MODELS)
    assert "its source left out" in str(v)


def test_fit_megamoe(tmp_path):
    data = os.path.join(REPO, "data", "published", "megamoe.csv")
    f = xstage.fit_megamoe(data, "h100-nvlink", source="DeepGEMM PR 440", bootstrap=20, seed=7)
    assert f.rows_fitted == 14 and f.median_after < f.median_before
    assert isinstance(f.iterations, int) and isinstance(f.rows[0]["line"], int)
    fitted = [t for t in f.terms if t["fitted"]]
    assert fitted and all(t["lo"] <= t["scale"] <= t["hi"] for t in fitted)
    # the tuned profile is the one `xstage fit megamoe -o` writes
    out = tmp_path / "tuned.json"
    subprocess.run([cli_path(), "fit", "megamoe", "--data", data, "--profile", "h100-nvlink",
                    "--source", "DeepGEMM PR 440", "--bootstrap", "20", "--seed", "7", "-o",
                    str(out)], capture_output=True, check=True)
    import json
    assert json.loads(out.read_text()) == f.tuned.to_dict()
    s = str(f)
    assert "14 rows of gpu h100-nvlink" in s and "median" in s and "->" in s
    with pytest.raises(xstage.InvalidInputError):
        xstage.fit_megamoe(data, "h100-nvlink", terms=["nope"])


def test_str_is_the_short_report():
    p = xstage.plan_flashattn("llama3-8b", "h100-nvlink", seq=2048)
    s = str(p)
    assert s.startswith("Ring attention plan: llama3-8b, 2048 tokens per rank, CP 8")
    assert all(w in s for w in ("local", "sequential", "dedicated-stream", "dedicated-sms",
                                "piggyback"))
    assert " us" in s or " ms" in s
    assert p.best in p.paths and p.best_way is p.paths[p.best]
    assert p.best_way.burstgap_s == min(w.burstgap_s for w in p.paths.values()
                                        if w.burstgap_s is not None and
                                        p.paths["local"] is not w)
    assert p.paths["piggyback"].kernel.proposal  # a proposal, and so named
    t = xstage.plan_flashattn_table("llama3-8b", "h100-nvlink", seq=[1024, 2048])
    assert "1024 tokens" in str(t) and "2048 tokens" in str(t)
    m = xstage.plan_megamoe("deepseek-v3", "h200-nvlink", tokens=64)
    assert "[DeepGEMM PR 440]" in str(m) and "deep_gemm.fp8_mega_moe(" in str(m)
    assert "16777215" not in str(m) and "\n" not in repr(m)
