"""What the functions return: frozen dataclasses over the JSON documents
that the library makes (the same documents ``xstage ... --json`` prints).

Each result has typed fields for what a caller reads most (whole numbers
as ``int``), ``extra`` for keys this package does not name (a newer
library may add some), ``to_dict()`` for the document exactly as the
library wrote it, and ``r["key"]`` as a shorthand for ``to_dict()["key"]``.
``repr()`` is one line of the scalar fields; ``str()`` is a short report
in units; tables of rows (:class:`Validation`, :class:`Sweep`,
:class:`MoETable`, :class:`FATable`) also give ``records()`` (flat dicts,
one a row), ``to_csv()`` and ``to_pandas()``.
"""
import csv
import dataclasses
import io
import typing
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from . import _lib


def format_time(seconds):
    """A time as the command prints it ("12.3 us", "0 ns"), by the library."""
    if seconds is None:
        return "-"
    buf = _lib.ctypes.create_string_buffer(32)
    return _lib.xs_format_time(float(seconds), buf, 32).decode()


def _convert(hint, value):
    """value (from JSON) as the type hint says: nested results, lists and
    dicts of them, whole numbers as int."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Union:  # Optional[X]
        inner = [a for a in args if a is not type(None)]
        return None if value is None else _convert(inner[0], value)
    if origin in (list, List) and isinstance(value, list):
        return [_convert(args[0], v) for v in value] if args else value
    if origin in (dict, Dict) and isinstance(value, dict):
        return {k: _convert(args[1], v) for k, v in value.items()} if args else value
    if isinstance(hint, type) and issubclass(hint, Result) and isinstance(value, dict):
        return hint.from_dict(value)
    if hint is int and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


class Result:
    """The base of every result: built from the library's document."""

    @classmethod
    def from_dict(cls, doc):
        hints = typing.get_type_hints(cls)
        names = [f.name for f in dataclasses.fields(cls) if f.name != "extra"]
        kw = {n: _convert(hints[n], doc[n]) for n in names if n in doc}
        if "extra" in hints:
            kw["extra"] = {k: v for k, v in doc.items() if k not in names}
        obj = cls(**kw)
        object.__setattr__(obj, "_doc", doc)
        return obj

    def to_dict(self):
        """The document as the library wrote it (`xstage ... --json`)."""
        return self._doc

    def __getitem__(self, key):
        return self._doc[key]

    def get(self, key, default=None):
        return self._doc.get(key, default)

    def keys(self):
        return self._doc.keys()

    def __contains__(self, key):
        return key in self._doc

    def __repr__(self):
        parts = []
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name == "extra" or v is None:
                continue
            if isinstance(v, list):
                kind = type(v[0]).__name__ if v else ""
                parts.append("%s=[%d %s]" % (f.name, len(v), kind) if v else "%s=[]" % f.name)
            elif isinstance(v, dict):
                parts.append("%s={%s}" % (f.name, ", ".join(map(str, list(v)[:6]))
                                          + (", ..." if len(v) > 6 else "")))
            elif isinstance(v, Result):
                parts.append("%s=%s" % (f.name, v._short()))
            else:
                parts.append("%s=%r" % (f.name, v))
        return "%s(%s)" % (type(self).__name__, ", ".join(parts))

    def _short(self):
        """How a result shows inside another's repr: its scalar fields."""
        scalars = ["%s=%r" % (f.name, getattr(self, f.name)) for f in dataclasses.fields(self)
                   if isinstance(getattr(self, f.name), (str, int, float, bool))]
        return "%s(%s)" % (type(self).__name__, ", ".join(scalars))

    def _repr_pretty_(self, p, cycle):  # IPython and Jupyter
        p.text(str(self))


def _columns(records):
    """Every key of records, in order of first appearance."""
    cols = {}
    for r in records:
        for k in r:
            cols.setdefault(k, None)
    return list(cols)


class Tabular(Result):
    """A result with rows: records(), to_csv() and to_pandas()."""

    def _row_dicts(self):  # the rows as dicts, before flattening
        raise NotImplementedError

    def records(self):
        """One flat dict a row: nested keys joined with "." ("chosen.time_s",
        "knobs.lag"), lists as their length."""
        out = []
        for row in self._row_dicts():
            flat = {}
            _flatten("", row, flat)
            out.append(flat)
        return out

    def columns(self):
        """Every key of records(), in order of first appearance."""
        return _columns(self.records())

    def to_csv(self, path=None):
        """The records as CSV (a header line, then one line a row; numbers
        written as repr() writes them, so that they read back exactly).
        path None: the text; else written to that file (or file object)."""
        recs = self.records()
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=_columns(recs), lineterminator="\n")
        w.writeheader()
        for r in recs:
            w.writerow({k: ("true" if v is True else "false" if v is False else
                            repr(v) if isinstance(v, float) else v) for k, v in r.items()})
        text = buf.getvalue()
        if path is None:
            return text
        if hasattr(path, "write"):
            path.write(text)
        else:
            with open(path, "w", newline="") as f:
                f.write(text)
        return None

    def to_pandas(self):
        """The records as a pandas DataFrame (needs pandas)."""
        try:
            import pandas
        except ImportError:
            raise ImportError("xstage: to_pandas() needs pandas (Debian: apt-get install "
                              "python3-pandas; pip: pip install pandas); to_csv() and "
                              "records() need nothing") from None
        recs = self.records()
        return pandas.DataFrame.from_records(recs, columns=_columns(recs))

    def _repr_html_(self):
        recs = self.records()
        cols = _columns(recs)
        esc = lambda s: (str(s).replace("&", "&amp;").replace("<", "&lt;")  # noqa: E731
                         .replace(">", "&gt;"))
        head = "".join("<th>%s</th>" % esc(c) for c in cols)
        body = "".join("<tr>%s</tr>" % "".join("<td>%s</td>" % esc(r.get(c, ""))
                                               for c in cols) for r in recs[:50])
        more = "<p>... %d rows in all</p>" % len(recs) if len(recs) > 50 else ""
        return "<p>%s</p><table><tr>%s</tr>%s</table>%s" % (esc(str(self).split("\n")[0]),
                                                            head, body, more)


def _flatten(prefix, value, out):
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(prefix + "." + k if prefix else k, v, out)
    elif isinstance(value, list):
        out[prefix] = len(value)
    else:
        out[prefix] = value


# ---- predict and simulate ----

@dataclass(frozen=True, repr=False)
class WorkerTime(Result):
    name: Optional[str] = None
    finish_s: Optional[float] = None
    stall_s: Optional[float] = None
    extra: Dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, repr=False)
class SendTime(Result):
    id: Optional[str] = None
    worker: Optional[str] = None
    channel: Optional[str] = None
    bytes: Optional[float] = None
    issue_start_s: Optional[float] = None
    issue_end_s: Optional[float] = None
    deliver_s: Optional[float] = None
    xstage_s: Optional[float] = None
    stall_s: Optional[float] = None
    extra: Dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, repr=False)
class ChannelUse(Result):
    name: Optional[str] = None
    bytes: Optional[float] = None
    peak_backlog_B: Optional[float] = None
    extra: Dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, repr=False)
class Prediction(Result):
    """One model's result for a program: `xstage predict --json`'s object
    under "models" (serial and ideal have the makespan only)."""
    model: Optional[str] = None
    makespan_s: Optional[float] = None
    issue_done_s: Optional[float] = None
    workers: List[WorkerTime] = field(default_factory=list)
    sends: List[SendTime] = field(default_factory=list)
    channels: List[ChannelUse] = field(default_factory=list)
    extra: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of_model(cls, model, doc):
        obj = cls.from_dict(doc)
        object.__setattr__(obj, "model", model)
        return obj

    def __str__(self):
        s = "%s: makespan %s" % (self.model, format_time(self.makespan_s))
        if self.issue_done_s is not None:
            s += ", last worker done %s" % format_time(self.issue_done_s)
        if self.sends:
            s += "; %d worker%s, %d send%s, largest X-stage %s" % (
                len(self.workers), "s"[:len(self.workers) != 1], len(self.sends),
                "s"[:len(self.sends) != 1],
                format_time(max(x.xstage_s or 0 for x in self.sends)))
        return s


# ---- MegaMoE ----

@dataclass(frozen=True, repr=False)
class MoEConfig(Result):
    """The config a plan was made for (whole numbers are int)."""
    tokens: Optional[int] = None
    hidden: Optional[int] = None
    intermediate: Optional[int] = None
    experts: Optional[int] = None
    topk: Optional[int] = None
    ep: Optional[int] = None
    act_bytes: Optional[float] = None
    combine_bytes: Optional[float] = None
    imbalance: Optional[float] = None
    dtype: Optional[str] = None
    extra: Dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, repr=False)
class Knobs(Result):
    """A MegaMoE schedule's knobs: the tile and the schedule's own (None:
    the schedule has no such knob; order "all-l1-first" where every L1
    tile comes first, with no lag); knobs a newer planner adds are in
    extra."""
    block_m: Optional[int] = None
    block_n: Optional[int] = None
    experts_per_wave: Optional[int] = None
    warmup: Optional[int] = None
    lag: Optional[int] = None
    group: Optional[int] = None
    order: Optional[str] = None
    extra: Dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, repr=False)
class Call(Result):
    """What a user calls to run an option (docs/plan-megamoe.md "The
    calls"): the kernel, its version and the sources its model was read
    from, the calls (each with its arguments under the kernel's own names,
    and as Python), what the kernel picks by itself, and, for a proposal,
    the change it needs (None: the kernel runs it as given); validate: the
    row of `xstage validate megamoe` that predicts it."""
    label: Optional[str] = None
    name: Optional[str] = None
    version: Optional[str] = None
    source: Optional[str] = None
    calls: List[Dict[str, Any]] = field(default_factory=list)
    picks: Optional[Dict[str, int]] = None
    order: Optional[str] = None
    proposal: Optional[str] = None
    validate: Optional[Dict[str, str]] = None
    extra: Dict[str, Any] = field(default_factory=dict)

    @property
    def python(self):
        """The calls as Python lines."""
        return [c.get("python", "") for c in self.calls]

    def __str__(self):
        lines = ["%s%s" % ("a proposal on " if self.proposal else "", self.version)]
        lines += ["  " + line for line in self.python]
        lines.append("  the kernel picks: %s" % self.order)
        if self.proposal:
            lines.append("  the change it needs: %s" % self.proposal)
        return "\n".join(lines)

    def _short(self):
        return "Call(%s%s)" % (self.label, ", proposal" if self.proposal else "")


@dataclass(frozen=True, repr=False)
class MoESchedule(Result):
    """One schedule of a plan: its time under each model, its knobs, the
    call that runs it, and where the burstgap time goes."""
    burstgap_s: Optional[float] = None
    interval_us: Optional[List[float]] = None
    blocking_s: Optional[float] = None
    serial_s: Optional[float] = None
    ideal_s: Optional[float] = None
    knobs: Optional[Knobs] = None
    kernel: Optional[Call] = None
    breakdown: Optional[Dict[str, Any]] = None
    extra: Dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, repr=False)
class Option(Result):
    """One option of a recommendation: a schedule, its knob rule and time."""
    schedule: Optional[str] = None
    rule: Optional[str] = None
    away: Optional[int] = None
    time_s: Optional[float] = None
    interval_us: Optional[List[float]] = None
    knobs: Optional[Knobs] = None
    kernel: Optional[Call] = None
    extra: Dict[str, Any] = field(default_factory=dict)

    def __str__(self):
        s = "%s (%s) %s" % (self.schedule, self.rule, format_time(self.time_s))
        if self.kernel is not None:
            s += " [%s%s]" % ("proposal on " if self.kernel.proposal else "",
                              self.kernel.label)
        return s

    def _short(self):
        return "Option(%s)" % self

@dataclass(frozen=True, repr=False)
class Recommendation(Result):
    """What a kernel should follow at a token count: the chosen option, the
    fastest, the runner-up (the fastest of another schedule) and the
    options within the tolerance; certainty: how sure the planner is (the
    runner-up's margin, and whether the choice holds on a finer grid of
    knobs), where the planner says it."""
    tokens: Optional[int] = None
    lo: Optional[int] = None
    block_m: Optional[int] = None
    stagger: Optional[int] = None
    tolerance: Optional[float] = None
    chosen: Optional[Option] = None
    best: Optional[Option] = None
    runner_up: Optional[Option] = None
    near: List[Option] = field(default_factory=list)
    certainty: Optional[Dict[str, Any]] = None
    verdict: Optional[Dict[str, Any]] = None
    fastest_shipping: Optional[Option] = None
    extra: Dict[str, Any] = field(default_factory=dict)

    def __str__(self):
        s = "at %s tokens: %s" % (self.tokens, self.chosen)
        if self.runner_up is not None and self.chosen is not None and self.chosen.time_s:
            s += "; runner-up %s, %+.2f%%" % (self.runner_up, 100 * (
                self.runner_up.time_s / self.chosen.time_s - 1))
        return s + "; %d options within %g%%" % (len(self.near), 100 * (self.tolerance or 0))


@dataclass(frozen=True, repr=False)
class MoEPlan(Result):
    """`xstage plan megamoe --json`: every schedule's times, knobs and
    breakdown, and the recommended option."""
    preset: Optional[str] = None
    profile: Optional[str] = None
    config: Optional[MoEConfig] = None
    workload: Optional[Dict[str, Any]] = None
    schedules: Dict[str, MoESchedule] = field(default_factory=dict)
    best_fused: Optional[str] = None
    recommended: Optional[Recommendation] = None
    sensitivity: Optional[List[Dict[str, Any]]] = None
    extra: Dict[str, Any] = field(default_factory=dict)

    def __str__(self):
        c = self.config
        lines = ["MegaMoE plan: %s, %s tokens per rank, EP %s, on %s"
                 % (self.preset, c.tokens if c else "?", c.ep if c else "?", self.profile)]
        for name, s in self.schedules.items():
            lines.append("  %-18s %10s (blocking %s, ideal %s)%s" % (
                name, format_time(s.burstgap_s), format_time(s.blocking_s),
                format_time(s.ideal_s), "  [%s%s]" % (
                    "proposal on " if s.kernel.proposal else "", s.kernel.label)
                if s.kernel is not None else ""))
        if self.recommended is not None:
            lines.append("  recommended " + str(self.recommended))
            chosen = self.recommended.chosen
            if chosen is not None and chosen.kernel is not None:
                lines += ["    " + line for line in str(chosen.kernel).split("\n")]
        return "\n".join(lines)


@dataclass(frozen=True, repr=False)
class MoETable(Tabular):
    """`xstage plan megamoe --tokens-grid ... --json`: the recommendation
    at each token count of the grid."""
    preset: Optional[str] = None
    profile: Optional[str] = None
    ep: Optional[int] = None
    tolerance: Optional[float] = None
    changes: Optional[int] = None
    grid: List[Recommendation] = field(default_factory=list)
    extra: Dict[str, Any] = field(default_factory=dict)

    def _row_dicts(self):
        return [r.to_dict() for r in self.grid]

    def __str__(self):
        lines = ["MegaMoE knob table: %s on %s, EP %s, %d token counts, %s changes"
                 % (self.preset, self.profile, self.ep, len(self.grid), self.changes)]
        lines += ["  " + str(r) for r in self.grid[:20]]
        if len(self.grid) > 20:
            lines.append("  ... %d rows in all" % len(self.grid))
        return "\n".join(lines)


# ---- attention ----

@dataclass(frozen=True, repr=False)
class FACall(Result):
    """What a user calls for one way of a ring (docs/plan-flashattn.md
    "Kernels and calls"): the attention kernel's function and package, the
    passes the GPU runs it with, ring-flash-attention's function where it
    runs the way, and for a proposal the change it needs (None: runs as
    given)."""
    label: Optional[str] = None
    kernel: Optional[str] = None
    function: Optional[str] = None
    package: Optional[str] = None
    passes: Optional[str] = None
    ring: Optional[str] = None
    way: Optional[str] = None
    source: Optional[str] = None
    ring_source: Optional[str] = None
    proposal: Optional[str] = None
    extra: Dict[str, Any] = field(default_factory=dict)

    def __str__(self):
        s = "%s%s" % ("a proposal on " if self.proposal else "", self.label)
        call = self.ring or self.function
        return s + (" (%s)" % call if call else "")

    def _short(self):
        return "FACall(%s%s)" % (self.label, ", proposal" if self.proposal else "")


@dataclass(frozen=True, repr=False)
class FAWay(Result):
    """One way of moving KV at the plan's layout: its time under each model
    (None where the plan gives none), where the time goes, its call."""
    burstgap_s: Optional[float] = None
    blocking_s: Optional[float] = None
    serial_s: Optional[float] = None
    ideal_s: Optional[float] = None
    breakdown: Optional[Dict[str, Any]] = None
    kernel: Optional[FACall] = None
    extra: Dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, repr=False)
class FAPlan(Result):
    """`xstage plan flashattn --json`: every way (``paths``) at the
    config's layout and every ring (way and layout, ``ring``); ``best`` is
    the fastest way's name (``best_way`` its entry) and ``speedup``
    piggyback over sequential."""
    preset: Optional[str] = None
    profile: Optional[str] = None
    seq: Optional[int] = None
    cp: Optional[int] = None
    causal: Optional[bool] = None
    layout: Optional[str] = None
    kernel: Optional[str] = None
    backward: Optional[bool] = None
    batch: Optional[int] = None
    timing: Optional[str] = None
    paths: Dict[str, FAWay] = field(default_factory=dict)
    best: Optional[str] = None
    speedup: Optional[float] = None
    speedup_vs_dedicated: Optional[float] = None
    blocking_speedup: Optional[float] = None
    ring: List[Dict[str, Any]] = field(default_factory=list)
    searched: Optional[int] = None
    recommended: Optional[Dict[str, Any]] = None
    sensitivity: Optional[List[Dict[str, Any]]] = None
    extra: Dict[str, Any] = field(default_factory=dict)

    @property
    def best_way(self):
        """The fastest way's entry of ``paths`` (an :class:`FAWay`)."""
        return self.paths.get(self.best) if self.best else None

    def __str__(self):
        lines = ["Ring attention plan: %s, %s tokens per rank, CP %s, %s, %s%s %s, on %s" % (
            self.preset, self.seq, self.cp, "causal" if self.causal else "full mask",
            "layout %s, " % self.layout if self.causal else "", self.kernel,
            "forward and backward" if self.backward else "forward", self.profile)]
        for name, w in self.paths.items():
            lines.append("  %-17s %10s  %s" % (name, format_time(w.burstgap_s),
                                                w.kernel if w.kernel is not None else ""))
        if self.best is not None:
            lines.append("  fastest: %s; piggyback over sequential %.3fx" % (
                self.best, self.speedup or float("nan")))
        return "\n".join(lines)


@dataclass(frozen=True, repr=False)
class FATable(Tabular):
    """`xstage plan flashattn --seq-grid ... --json`."""
    preset: Optional[str] = None
    profile: Optional[str] = None
    cp: Optional[int] = None
    causal: Optional[bool] = None
    kernel: Optional[str] = None
    tolerance: Optional[float] = None
    changes: Optional[int] = None
    grid: List[Dict[str, Any]] = field(default_factory=list)
    extra: Dict[str, Any] = field(default_factory=dict)

    def _row_dicts(self):
        return self.grid

    def __str__(self):
        lines = ["Ring attention table: %s on %s, CP %s, %s, %d lengths, %s changes"
                 % (self.preset, self.profile, self.cp, self.kernel, len(self.grid),
                    self.changes)]
        for r in self.grid[:20]:
            c = r.get("chosen") or {}
            lines.append("  %8s tokens: %s, %s %s" % (r.get("seq"), c.get("path"),
                                                     c.get("layout"),
                                                     format_time(c.get("time_s"))))
        if len(self.grid) > 20:
            lines.append("  ... %d rows in all" % len(self.grid))
        return "\n".join(lines)


# ---- sweeps and validation ----

@dataclass(frozen=True, repr=False)
class Sweep(Tabular):
    """`xstage sweep ... --json`: one record a config, and the summary."""
    profile: Optional[str] = None
    configs: List[Dict[str, Any]] = field(default_factory=list)
    summary: Optional[Dict[str, Any]] = None
    extra: Dict[str, Any] = field(default_factory=dict)

    def _row_dicts(self):
        return self.configs

    def __str__(self):
        s = "sweep on %s: %d configs" % (self.profile, len(self.configs))
        if self.summary:
            s += "; " + ", ".join("%s %.4g" % (k, v) for k, v in self.summary.items()
                                  if isinstance(v, (int, float)))
        return s


@dataclass(frozen=True, repr=False)
class ValidationRow(Result):
    """One published timing beside its prediction (error = predicted /
    measured - 1); a planner's own columns are in extra."""
    source: Optional[str] = None
    gpu: Optional[str] = None
    tokens: Optional[int] = None
    arm: Optional[str] = None
    measured_us: Optional[float] = None
    predicted_us: Optional[float] = None
    error: Optional[float] = None
    interval_us: Optional[List[float]] = None
    extra: Dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, repr=False)
class Validation(Tabular):
    """`xstage validate ... --json`: every row predicted, and the summary
    (median and largest |error|, per arm)."""
    rows: List[ValidationRow] = field(default_factory=list)
    summary: Optional[Dict[str, Any]] = None
    extra: Dict[str, Any] = field(default_factory=dict)

    def _row_dicts(self):
        return [r.to_dict() for r in self.rows]

    def __str__(self):
        s = self.summary or {}

        def pct(v):
            return "-" if v is None else "%.1f%%" % (100 * v)
        lines = ["validation: %d rows, median |error| %s, largest %s" % (
            len(self.rows), pct(s.get("median_abs_error")), pct(s.get("max_abs_error")))]
        # an arm (megamoe, flashattn) or a library and kernel mode (ep)
        for arm, a in (s.get("by_arm") or s.get("by_library_kernel") or {}).items():
            line = "  %-26s %3d rows, median |error| %s" % (arm, a.get("rows", 0),
                                                            pct(a.get("median_abs_error")))
            if "loso_median_abs_error" in a:
                line += ", its source left out %s" % pct(a["loso_median_abs_error"])
            lines.append(line)
        return "\n".join(lines)


@dataclass(frozen=True, repr=False)
class MoEFit(Result):
    """`xstage fit megamoe`: the rows fitted (each row's line, measured,
    before and after), the |error| over them before and after, and per term
    whether it was fitted, its scale with the 68% bootstrap interval (lo,
    hi), the numbers it moved (keys, base, value), its sensitivity, or why
    not; ``tuned`` is the profile with the fitted numbers."""
    profile: Optional[str] = None
    data: Optional[str] = None
    rows_fitted: Optional[int] = None
    skipped: Optional[int] = None
    rows: List[Dict[str, Any]] = field(default_factory=list)
    median_before: Optional[float] = None
    median_after: Optional[float] = None
    max_before: Optional[float] = None
    max_after: Optional[float] = None
    iterations: Optional[int] = None
    evaluations: Optional[int] = None
    terms: List[Dict[str, Any]] = field(default_factory=list)
    extra: Dict[str, Any] = field(default_factory=dict)

    def __str__(self):
        lines = ["fit megamoe: %s rows of gpu %s in %s (%s other rows skipped)" % (
            self.rows_fitted, self.profile, self.data, self.skipped),
            "  |error| over these rows: median %.1f%% before, %.1f%% after; largest %.1f%% "
            "before, %.1f%% after" % (100 * self.median_before, 100 * self.median_after,
                                       100 * self.max_before, 100 * self.max_after)]
        for t in self.terms:
            if t["fitted"]:
                lines.append("  %-10s x%.3f (x%.3f-x%.3f) %s: %.4g -> %.4g" % (
                    t["term"], t["scale"], t["lo"], t["hi"], t["keys"], t["base"], t["value"]))
        return "\n".join(lines)


__all__ = ["Result", "Tabular", "Prediction", "WorkerTime", "SendTime", "ChannelUse",
           "MoEConfig", "Knobs", "Call", "MoESchedule", "Option", "Recommendation", "MoEPlan",
           "MoETable", "FACall", "FAWay", "FAPlan", "FATable", "Sweep", "ValidationRow",
           "Validation", "MoEFit", "format_time"]
