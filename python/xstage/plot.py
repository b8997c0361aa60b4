"""Plots of xstage's results with matplotlib, which is optional: importing
this module without it raises an ImportError that says how to install it.

- :func:`validation`: predicted against measured, log axes, a +-20% band,
  one colour an arm (the picture ``xstage validate --svg`` draws);
- :func:`table`: a knob table's predicted time against token counts, one
  marker a schedule, where the choice changes;
- :func:`sweep`: one column of a sweep against another.

Each takes an optional matplotlib Axes (``ax``) and returns the Axes it
drew on, so that a notebook can go on from there.
"""
try:
    import matplotlib
    import matplotlib.pyplot as plt
except ImportError:  # pragma: no cover - depends on the machine
    raise ImportError("xstage.plot needs matplotlib (Debian: apt-get install "
                      "python3-matplotlib; pip: pip install matplotlib)") from None

from ._check import text
from ._errors import ArgumentTypeError, InvalidInputError
from ._results import MoETable, Sweep, Validation

__all__ = ["validation", "table", "sweep", "matplotlib"]


def _axes(ax):
    if ax is None:
        return plt.subplots(figsize=(6, 5))[1]
    if not hasattr(ax, "plot"):
        raise ArgumentTypeError("ax: expected a matplotlib Axes, got %s" % type(ax).__name__)
    return ax


def validation(v, ax=None, band=0.2):
    """Predicted against measured time (us) of a :class:`Validation`, one
    colour an arm, the y = x line and y = x(1 +- band)."""
    if not isinstance(v, Validation):
        raise ArgumentTypeError("validation: expected an xstage.Validation, got %s"
                                % type(v).__name__)
    if not v.rows:
        raise InvalidInputError("validation: no rows to plot")
    ax = _axes(ax)
    arms = []
    for r in v.rows:
        if r.arm not in arms:
            arms.append(r.arm)
    for arm in arms:
        rows = [r for r in v.rows if r.arm == arm]
        ax.scatter([r.measured_us for r in rows], [r.predicted_us for r in rows], s=18,
                   label="%s (%d)" % (arm, len(rows)))
    lo = min(min(r.measured_us, r.predicted_us) for r in v.rows) / 1.5
    hi = max(max(r.measured_us, r.predicted_us) for r in v.rows) * 1.5
    ax.plot([lo, hi], [lo, hi], color="black", linewidth=1)
    for f in (1 - band, 1 + band):
        ax.plot([lo, hi], [lo * f, hi * f], color="grey", linewidth=0.8, linestyle="--")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("measured (us)")
    ax.set_ylabel("predicted (us)")
    ax.legend(fontsize="small")
    return ax


def table(t, ax=None):
    """A :class:`MoETable`: the chosen option's predicted time (us) against
    tokens per rank, one marker a schedule."""
    if not isinstance(t, MoETable):
        raise ArgumentTypeError("table: expected an xstage.MoETable, got %s" % type(t).__name__)
    ax = _axes(ax)
    by = {}
    for r in t.grid:
        by.setdefault(r.chosen.schedule, []).append((r.tokens, r.chosen.time_s * 1e6))
    for schedule, pts in by.items():
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", linestyle="none",
                label=schedule)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("tokens per rank")
    ax.set_ylabel("predicted time (us)")
    ax.set_title("%s on %s" % (t.preset, t.profile))
    ax.legend(fontsize="small")
    return ax


def sweep(s, x, y, ax=None):
    """Column y against column x of a :class:`Sweep`'s records (e.g. x
    "tokens", y "speedup"), one line a preset."""
    if not isinstance(s, Sweep):
        raise ArgumentTypeError("sweep: expected an xstage.Sweep, got %s" % type(s).__name__)
    x, y = text("x", x).decode(), text("y", y).decode()
    recs = s.records()
    for col in (x, y):
        if not recs or col not in recs[0]:
            raise InvalidInputError("%s: not a column of the sweep (%s)"
                                    % (col, ", ".join(s.columns())))
    ax = _axes(ax)
    by = {}
    for r in recs:
        by.setdefault(r.get("preset", ""), []).append((r[x], r[y]))
    for preset, pts in by.items():
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=preset)
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.legend(fontsize="small")
    return ax
