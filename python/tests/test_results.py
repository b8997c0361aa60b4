"""Results as a user handles them: dataclasses that print in a line (and
in a few lines with str), records and CSV that read back to the same
numbers as the document, pandas and matplotlib where they are installed."""
import csv
import io
import json
import pickle
import statistics

import pytest

import xstage

GRID = {"presets": ["glm", "mixtral-8x7b"], "tokens": [64, 512]}


@pytest.fixture(scope="module")
def validation():
    return xstage.validate_megamoe()


@pytest.fixture(scope="module")
def sweep():
    return xstage.sweep_megamoe("h200-nvlink", GRID)


def test_repr_is_one_line_and_str_in_units():
    plan = xstage.plan_megamoe("deepseek-v3", "h200-nvlink", tokens=4096)
    r = repr(plan)
    assert "\n" not in r and r.startswith("MoEPlan(preset='deepseek-v3'")
    assert "config=MoEConfig(tokens=4096" in r and len(r) < 600
    s = str(plan)
    assert s.splitlines()[0] == ("MegaMoE plan: deepseek-v3, 4096 tokens per rank, EP 8, "
                                 "on h200-nvlink")
    assert " ms" in s or " us" in s
    p = xstage.predict({"name": "x", "workers": [{"name": "w", "ops": [{"send": 1e6}]}]},
                       "h200-nvlink")
    assert str(p).startswith("burstgap: makespan ") and "1 worker, 1 send" in str(p)


def test_results_compare_and_pickle():
    a = xstage.plan_megamoe("glm", "h200-nvlink", tokens=256)
    b = xstage.plan_megamoe("glm", "h200-nvlink", tokens=256)
    assert a == b and a is not b
    assert a != xstage.plan_megamoe("glm", "h200-nvlink", tokens=512)
    with pytest.raises(AttributeError):
        a.preset = "other"  # frozen
    e = xstage.InvalidInputError("x: bad", "INVALID")
    assert pickle.loads(pickle.dumps(e)).message == "x: bad"


def test_records_flatten_the_document(sweep):
    recs = sweep.records()
    assert len(recs) == len(sweep.configs) == 4
    for rec, doc in zip(recs, sweep.to_dict()["configs"]):
        for k, v in doc.items():
            if not isinstance(v, (dict, list)):
                assert rec[k] == v
    assert type(recs[0]["tokens"]) is int


def _read_back(text):
    rows = list(csv.DictReader(io.StringIO(text)))
    return rows


def test_csv_reads_back_exactly(validation, sweep):
    """to_csv() against the document, the second way: every cell parses
    back to the document's number (repr round-trips a double)."""
    for result, rows_key in ((validation, "rows"), (sweep, "configs")):
        text = result.to_csv()
        rows = _read_back(text)
        docs = result.to_dict()[rows_key]
        assert len(rows) == len(docs)
        for row, doc in zip(rows, docs):
            for k, v in doc.items():
                if isinstance(v, bool):
                    assert row[k] == ("true" if v else "false")
                elif isinstance(v, (int, float)):
                    assert float(row[k]) == v, (k, row[k], v)
                elif isinstance(v, str):
                    assert row[k] == v


def test_csv_to_a_file(tmp_path, validation):
    f = tmp_path / "v.csv"
    assert validation.to_csv(str(f)) is None
    assert f.read_text() == validation.to_csv()
    buf = io.StringIO()
    validation.to_csv(buf)
    assert buf.getvalue() == validation.to_csv()


def test_pandas(validation, sweep):
    pandas = pytest.importorskip("pandas", reason="python3-pandas is not installed")
    df = validation.to_pandas()
    assert isinstance(df, pandas.DataFrame)
    assert len(df) == len(validation.rows)
    assert list(df.columns) == validation.columns()
    # pandas against the rows themselves (the summary's median may leave
    # out rows that measure something other than time)
    med = (df["error"].abs()).median()
    assert med == pytest.approx(statistics.median(abs(r.error) for r in validation.rows),
                                rel=1e-12)
    sdf = sweep.to_pandas()
    assert sdf["tokens"].dtype.kind == "i"
    assert list(sdf["preset"]) == [c["preset"] for c in sweep.configs]


def test_tables_export(tmp_path):
    t = xstage.plan_megamoe_table("glm", "h200-nvlink", tokens=[64, 128, 256])
    recs = t.records()
    assert [r["tokens"] for r in recs] == [64, 128, 256]
    assert recs[0]["chosen.schedule"] == t.grid[0].chosen.schedule
    assert float(_read_back(t.to_csv())[1]["chosen.time_s"]) == t.grid[1].chosen.time_s
    html = t._repr_html_()
    assert html.count("<tr>") == 4 and "chosen.schedule" in html


def test_plot_helpers(tmp_path, validation, sweep):
    pytest.importorskip("matplotlib", reason="python3-matplotlib is not installed")
    import matplotlib
    matplotlib.use("Agg")
    from xstage import plot
    ax = plot.validation(validation)
    # one collection a arm, the points where the rows are
    arms = {r.arm for r in validation.rows}
    assert len(ax.collections) == len(arms)
    xs = sorted(float(x) for c in ax.collections for x, _ in c.get_offsets())
    assert xs == sorted(r.measured_us for r in validation.rows)
    out = tmp_path / "v.png"
    ax.figure.savefig(str(out))
    assert out.stat().st_size > 1000
    t = xstage.plan_megamoe_table("glm", "h200-nvlink", tokens=[64, 128, 256])
    ax2 = plot.table(t)
    assert sum(len(line.get_xdata()) for line in ax2.lines) == 3
    ax3 = plot.sweep(sweep, "tokens", "speedup")
    assert len(ax3.lines) == 2
    with pytest.raises(ValueError):
        plot.sweep(sweep, "tokens", "no-such-column")
    with pytest.raises(TypeError):
        plot.validation(json.loads("{}"))
