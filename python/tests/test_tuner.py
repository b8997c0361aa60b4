"""xstage.Tuner over libxstage's tuner (docs/tune.md "The tuner")."""
import math
import os
import random
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..")))

import xstage  # noqa: E402


@pytest.fixture(scope="module")
def tuner():
    t = xstage.Tuner("qwen3-235b", "h200-nvlink", tokens=[64, 256])
    yield t
    t.close()


def test_choose_and_observe(tuner):
    c = tuner.choose(200)
    assert c["tokens"] == 256  # 200 is nearer 256 than 64 in log tokens
    assert c["schedule"] in xstage.MOE_SCHEDULES
    # the tile and the schedule's own knobs, as a plan reports them; whole
    # numbers as int
    own = {"fused-wave": {"experts_per_wave"}, "fused-interleaved": {"warmup"}}.get(
        c["schedule"], {"lag", "group"} if c["schedule"] in ("l1-then-l2", "searched",
                                                             "fused-lag") else set())
    if "order" in c["knobs"]:
        own = {"order"}
    assert set(c["knobs"]) == {"block_m", "block_n"} | own
    assert all(isinstance(v, int) for k, v in c["knobs"].items() if k != "order")
    assert isinstance(c["tokens"], int) and c["outside"] is False
    assert c["predicted_s"] > 0 and c["sd"] > 0 and c["best_s"] <= c["predicted_s"] * 1.2
    # the same belief gives the same choice
    assert tuner.choose(200) == c
    rnd = random.Random(2029)
    before = tuner.observations
    for _ in range(50):
        c = tuner.choose(256)
        tuner.observe(256, c, c["predicted_s"] * 1.3 * math.exp(rnd.gauss(0, 0.02)))
    assert tuner.observations == before + 50
    # every option 30% slower than planned: the tuner now predicts it so
    c = tuner.choose(256)
    assert abs(c["predicted_s"] / (c["best_s"]) - 1) < 0.25
    scale, sd = tuner.term("link", 256)
    assert scale > 0 and sd > 0
    assert tuner.term("a2a", 256) is None  # not learned
    assert tuner.state_bytes > 1000


def test_errors(tuner):
    with pytest.raises(xstage.Error) as e:
        tuner.choose(0)
    assert e.value.status == "INVALID"
    c = dict(tuner.choose(64))
    c["knobs"] = dict(c["knobs"], block_m=7)
    with pytest.raises(xstage.Error) as e:
        tuner.observe(64, c, 1e-4)
    assert e.value.status == "NOTFOUND"
    with pytest.raises(xstage.Error):
        tuner.observe(64, {"schedule": "nope", "knobs": {}}, 1e-4)
    with pytest.raises(xstage.Error):
        tuner.term("nope", 64)
    with pytest.raises(xstage.Error) as e:
        xstage.Tuner("qwen3-235b", "h200-nvlink", tokens=[256, 64])
    assert "ascending" in e.value.message
    with pytest.raises(xstage.Error):
        xstage.Tuner("qwen3-235b", "no-such-profile")
    with pytest.raises(xstage.Error):
        xstage.Tuner("qwen3-235b", "h200-nvlink", schedules=["nope"])


def test_closed():
    t = xstage.Tuner({"preset": "qwen3-235b", "tokens": 64}, "h200-nvlink",
                     schedules=["fused-lag", "searched"], terms=["link", "gemm"])
    assert t.choose(64)["schedule"] in ("fused-lag", "searched")
    t.close()
    with pytest.raises(xstage.Error):
        t.choose(64)


def test_repr_and_the_grid(tuner):
    assert repr(tuner).startswith("xstage.Tuner('qwen3-235b', 'h200-nvlink', tokens=[64, 256]")
    assert "observations=" in repr(tuner) and "\n" not in repr(tuner)
    # a count past the grid is refused, naming the grid, or taken from the
    # nearest end when asked, and said so
    with pytest.raises(xstage.Error) as e:
        tuner.choose(8192)
    assert "above the grid (64 to 256 tokens)" in e.value.message
    with pytest.raises(xstage.Error) as e:
        tuner.choose(16)
    assert "below the grid" in e.value.message
    c = tuner.choose(8192, outside="nearest")
    assert c["tokens"] == 256 and "the choice of the nearest end, 256 tokens" in c["outside"]
    assert c == dict(tuner.choose(256), outside=c["outside"])
    with pytest.raises(xstage.Error):
        tuner.choose(200, outside="extrapolate")


def test_an_order_is_observed_as_chosen():
    # all L1 first is an order, not a lag; observing the choice finds the
    # library's own option
    t = xstage.Tuner("deepseek-v3", "h200-nvlink", tokens=[64], schedules=["l1-then-l2"])
    c = t.choose(64)
    assert c["knobs"].get("order") == "all-l1-first" and "lag" not in c["knobs"]
    t.observe(64, c, c["predicted_s"])
    t.observe(64, {"schedule": c["schedule"], "knobs": dict(c["knobs"])}, c["predicted_s"])
    assert t.observations == 2
    t.close()
    assert "closed" in repr(t)
