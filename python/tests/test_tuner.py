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
                     schedules=["fused-lag", "searched"], terms=["link", "hbm"])
    assert t.choose(64)["schedule"] in ("fused-lag", "searched")
    t.close()
    with pytest.raises(xstage.Error):
        t.choose(64)


def test_threads_take_turns():
    """Four threads choosing and observing at once (20,000 each): every
    timing counted, and choose() still answers (a lost update of the
    library's sequence counter once left it odd and choose() spinning)."""
    import threading
    t = xstage.Tuner("qwen3-235b", "h200-nvlink", tokens=[64, 512])
    errors = []

    def work(seed):
        rnd = random.Random(seed)
        try:
            for i in range(20000):
                tokens = 64 if i % 2 else 512
                c = t.choose(tokens)
                t.observe(tokens, c, c["predicted_s"] * math.exp(rnd.gauss(0, 0.05)))
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(2029 + k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    assert not any(th.is_alive() for th in threads)
    assert errors == []
    assert t.observations == 80000
    assert t.choose(64)["schedule"] in xstage.MOE_SCHEDULES
    t.close()


@pytest.mark.parametrize("kwargs, kind, words", [
    ({"tokens": []}, ValueError, "tokens: expected at least one value"),
    ({"tokens": [True]}, TypeError, "tokens[0]: expected an int, got bool"),
    ({"tokens": ["64"]}, TypeError, "tokens[0]: expected an int, got str"),
    ({"tokens": "64"}, TypeError, "tokens: expected a list of whole numbers, got str"),
    ({"tokens": [64.5]}, ValueError, "tokens[0]: expected a whole number"),
    ({"tokens": list(range(1, 66))}, ValueError, "tokens: at most 64 values, got 65"),
    ({"noise": True}, TypeError, "noise: expected a number, got bool"),
    ({"noise": "0.02"}, TypeError, "noise: expected a number, got str"),
    ({"noise": 2.0}, ValueError, "tuner noise: expected 0 (the default) to 1"),
    ({"terms": ["gemm", 7]}, TypeError, "terms[1]: expected a str"),
    ({"terms": ["gemm", "nope"]}, ValueError, "terms[1]: unknown 'nope'"),
    ({"profile": None}, TypeError, "profile: expected a path"),
    ({"config": 7}, TypeError, "config: expected a preset name or a dict, got int"),
])
def test_create_arguments(kwargs, kind, words):
    args = {"config": "qwen3-235b", "profile": "h200-nvlink", "tokens": [64]}
    args.update(kwargs)
    with pytest.raises(xstage.Error) as e:
        xstage.Tuner(**args)
    assert isinstance(e.value, kind)
    assert words in e.value.message


def test_call_arguments(tuner):
    c = tuner.choose(64)
    n = tuner.observations
    bad = [
        (lambda: tuner.observe(64, None, 1e-4), TypeError, "choice: expected the dict"),
        (lambda: tuner.observe(64, dict(c, knobs=dict(c["knobs"], block_m=2 ** 32 + 64)), 1e-4),
         ValueError, "[\'block_m\']: expected a whole number from 0 to 4294967295"),
        (lambda: tuner.observe(64, dict(c, knobs=dict(c["knobs"], block_m=64.5)), 1e-4),
         ValueError, "[\'block_m\']: expected a whole number"),
        (lambda: tuner.observe(64, dict(c, knobs=dict(c["knobs"], blockm=64)), 1e-4),
         ValueError, "unknown knob 'blockm'"),
        (lambda: tuner.observe(64, dict(c, knobs=[64]), 1e-4), TypeError,
         "choice[\"knobs\"]: expected a dict"),
        (lambda: tuner.observe(64, c, True), TypeError, "measured_s: expected a number"),
        (lambda: tuner.observe(64, c, "1e-4"), TypeError, "measured_s: expected a number"),
        (lambda: tuner.observe(True, c, 1e-4), TypeError, "tokens: expected a number"),
        (lambda: tuner.term(["gemm", "hbm"], 64), TypeError, "term: name: expected a str"),
        (lambda: tuner.term("gemm", "64"), TypeError, "term: tokens: expected a number"),
        (lambda: tuner.choose(None), TypeError, "choose: tokens: expected a number"),
    ]
    # physically impossible times: refused, as the CSV readers refuse them
    for secs in (1e-300, 5e-324, 1e300, 1e-10, 2e6):
        bad.append((lambda secs=secs: tuner.observe(64, c, secs), ValueError,
                    "expected seconds from 1e-09 to 1e+06"))
    for call, kind, words in bad:
        with pytest.raises(xstage.Error) as e:
            call()
        assert isinstance(e.value, kind), e.value
        assert words in e.value.message, e.value.message
    assert tuner.observations == n  # nothing taken in


def test_outlier_bounded():
    """One timing of 10 s after 50 true ones moves no term by more than 5%
    (docs/tune.md: at most 1.345 standard deviations of the belief)."""
    t = xstage.Tuner("deepseek-v3", "h200-nvlink", tokens=[128])
    rnd = random.Random(2029)
    truth = {}
    for _ in range(50):
        c = t.choose(128)
        key = (c["schedule"], tuple(sorted(c["knobs"].items())))
        truth.setdefault(key, c["predicted_s"] * 0.95)
        t.observe(128, c, truth[key] * math.exp(rnd.gauss(0, 0.02)))
    before = {k: t.term(k, 128) for k in ("gemm", "hbm", "link")}
    t.observe(128, t.choose(128), 10.0)
    for k, was in before.items():
        if was is None:
            continue
        now = t.term(k, 128)
        assert abs(now[0] / was[0] - 1) <= 0.05, (k, was, now)
        assert abs(math.log(now[0] / was[0])) <= 1.345 * was[1] * (1 + 1e-9)
    t.close()
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
