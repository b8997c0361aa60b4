"""xstage.Tuner: libxstage's online tuner for a kernel's host code
(docs/tune.md "The tuner"), from Python.

Between launches, ``choose(tokens)`` says which MegaMoE schedule and knobs
to launch for a batch of that many tokens per rank (about a microsecond,
no allocation in the library), and ``observe(tokens, choice, seconds)``
takes in how long the launch took, updating the terms of the kernel model
that the timing informs. Example::

    import xstage
    t = xstage.Tuner("deepseek-v3", "h200-nvlink", tokens=[64, 256, 1024])
    c = t.choose(200)
    seconds = launch(c["schedule"], **c["knobs"])   # the kernel's own launch
    t.observe(200, c, seconds)

The binding holds the library's tuner through ctypes; it needs nothing
but the libxstage the package loaded. One Tuner may be shared by threads:
its calls take turns (a lock around each), and the library takes
observations one at a time besides.
"""
import ctypes
import threading

from . import _check, library_path
from ._errors import ArgumentTypeError, InvalidInputError, NotFoundError, from_status
from ._errors import raise_status as _raise
from ._lib import MoeConfig, XsError

__all__ = ["Tuner"]

_SCHEDULES = ["sequential", "l1-then-l2", "searched", "fused-split", "fused-wave",
              "fused-interleaved", "fused-lag"]
_TERMS = ["gemm", "tile", "l2", "hbm", "link", "link-issue", "capacity", "latency",
          "launch", "barrier", "setup", "host-sync", "a2a"]
_KNOBS = ["experts_per_wave", "warmup", "lag", "group", "block_m", "block_n"]

_U = ctypes.c_uint
_D = ctypes.c_double


class _Pattern(ctypes.Structure):
    _fields_ = [(k, _U) for k in _KNOBS]


class _Options(ctypes.Structure):  # xs_tuner_options
    _fields_ = [("tokens", ctypes.POINTER(_D)), ("ntokens", ctypes.c_size_t),
                ("table", ctypes.c_void_p), ("schedules", _U), ("terms", _U),
                ("noise", _D), ("prior", _D), ("option_prior", _D), ("half_life", _D),
                ("threshold", _D), ("margin", _D)]


class _Choice(ctypes.Structure):  # xs_tuner_choice
    _fields_ = [("schedule", ctypes.c_int), ("rule", _U), ("knobs", _Pattern),
                ("tokens", _D), ("predicted_s", _D), ("sd", _D), ("best_s", _D),
                ("explore", ctypes.c_int)]


_lib = None


def _library():
    """The functions this module calls, bound once, on the libxstage the
    package loaded; its struct sizes checked against these mirrors."""
    global _lib
    if _lib is not None:
        return _lib
    lib = ctypes.CDLL(library_path())
    P, S, E = ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(XsError)
    sigs = {
        "xs_struct_size": (ctypes.c_size_t, [S]),
        "xs_moe_config_parse": (ctypes.c_int, [S, ctypes.c_size_t, S, P, E]),
        "xs_profile_load": (ctypes.c_int, [S, ctypes.POINTER(P), E]),
        "xs_profile_parse": (ctypes.c_int, [S, ctypes.c_size_t, S, ctypes.POINTER(P), E]),
        "xs_profile_free": (None, [P]),
        "xs_tuner_create": (ctypes.c_int, [P, P, ctypes.POINTER(_Options),
                                           ctypes.POINTER(P), E]),
        "xs_tuner_free": (None, [P]),
        "xs_tuner_choose": (ctypes.c_int, [P, _D, ctypes.POINTER(_Choice)]),
        "xs_tuner_observe": (ctypes.c_int, [P, _D, ctypes.c_int, ctypes.POINTER(_Pattern),
                                            _D, E]),
        "xs_tuner_state_size": (ctypes.c_size_t, [P]),
        "xs_tuner_term": (ctypes.c_int, [P, _D, ctypes.c_int, ctypes.POINTER(_D),
                                         ctypes.POINTER(_D)]),
        "xs_tuner_observations": (ctypes.c_uint64, [P]),
        "xs_moe_rule_name": (ctypes.c_char_p, [ctypes.c_int, _U]),
    }
    for name, sig in sigs.items():
        try:
            f = getattr(lib, name)
        except AttributeError:
            raise NotFoundError("libxstage at %s has no %s: too old for xstage.Tuner"
                                % (library_path(), name)) from None
        f.restype, f.argtypes = sig
    # (xs_error's mirror, the package's, is checked when it loads)
    for cname, mirror in (("xs_tuner_options", _Options), ("xs_tuner_choice", _Choice)):
        size = lib.xs_struct_size(cname.encode())
        if size != ctypes.sizeof(mirror):
            raise InvalidInputError("libxstage's %s is %d bytes, xstage.Tuner's mirror %d: "
                                    "a library of another version"
                                    % (cname, size, ctypes.sizeof(mirror)))
    _lib = lib
    return lib


_KNOB_MAX = 2 ** 32 - 1  # xs_moe_pattern's fields are unsigned ints
_TOKENS_MAX = 10_000_000  # xs_tuner_options' grid: 1 to 1e7 tokens
_POINTS_MAX = 64  # XS_TUNER_MAX_POINTS
class Choice(dict):
    """What :meth:`Tuner.choose` returns: a dict (schedule, knobs, ...),
    which also holds the library's own knob values for :meth:`Tuner.observe`
    (an order of all L1 first is a lag the library counts, not a knob the
    kernel has)."""

    def __init__(self, d, pattern):
        super().__init__(d)
        self.pattern = pattern


def _whole(x):
    """A count as int when it is whole."""
    return int(x) if float(x).is_integer() else x


# the knobs of each schedule, as a plan reports them (a knob the kernel
# lacks is absent; docs/plan-megamoe.md "The calls")
_OWN_KNOBS = {"fused-wave": ("experts_per_wave",), "fused-interleaved": ("warmup",),
              "l1-then-l2": ("lag", "group"), "searched": ("lag", "group"),
              "fused-lag": ("lag", "group")}
_LAG_ALL = 16777215  # XS_MOE_LAG_ALL: every L1 tile first


def _knobs_of(schedule, k):
    out = {"block_m": k.block_m, "block_n": k.block_n}
    for name in _OWN_KNOBS.get(schedule, ()):
        out[name] = getattr(k, name)
    if out.get("lag", 0) >= _LAG_ALL:  # an order, not a lag
        del out["lag"], out["group"]
        out["order"] = "all-l1-first"
    return out


def _names(values, known, what):
    """A list of names (or one str, commas between names) into a bit
    mask, or 0 for None."""
    if values is None:
        return 0
    mask = 0
    for i, v in enumerate(_check.names(what, values, ", ".join(known))):
        if v not in known:
            raise InvalidInputError("%s[%d]: unknown %r (%s)" % (what, i, v, ", ".join(known)))
        mask |= 1 << known.index(v)
    return mask


def _knobs(value):
    """choice["knobs"]: a dict of knob names to whole numbers of an
    unsigned int (missing ones 0), each named where it is wrong."""
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise ArgumentTypeError("observe: choice[\"knobs\"]: expected a dict of %s, got %s"
                                % (", ".join(_KNOBS), type(value).__name__))
    for k in value:
        if k not in _KNOBS:
            raise InvalidInputError("observe: choice[\"knobs\"]: unknown knob %r (%s)"
                                    % (k, ", ".join(_KNOBS)))
    return _Pattern(**{k: _check.integer("observe: choice[\"knobs\"][%r]" % k,
                                         value.get(k, 0), 0, _KNOB_MAX) for k in _KNOBS})


class Tuner:
    """The online tuner (docs/tune.md "The tuner").

    ``config``: a preset name ("deepseek-v3") or a dict of the planner's
    config keys (docs/plan-megamoe.md; "preset" among them). ``profile``:
    a built-in profile's name, a path to one (a fitted profile from
    ``xstage fit megamoe``) or a dict of its JSON. ``tokens``: the batch
    sizes the kernel will see (at most 64; default: the config's tokens).
    ``schedules``, ``terms``: lists of names (default: all schedules; the
    tuner's default terms). The other arguments are xs_tuner_options'
    fields (0: the library's default): ``noise`` (relative spread of one
    timing), ``prior``, ``option_prior``, ``half_life`` (launches),
    ``threshold``, ``margin``. Creating it plans every batch size 15
    times (seconds; docs/limits.md gives the bound). Every argument is
    checked by type (a bool is no number, a str no list) before the
    library sees it; a wrong one raises :class:`xstage.Error`.
    """

    def __init__(self, config="deepseek-v3", profile="h200-nvlink", tokens=None,
                 schedules=None, terms=None, noise=0.0, prior=0.0, option_prior=0.0,
                 half_life=0.0, threshold=0.0, margin=0.0):
        lib = _library()
        self._lib, self._t, self._lock = lib, None, threading.Lock()
        if isinstance(config, str):
            config = {"preset": config}
        if not isinstance(config, dict):
            raise ArgumentTypeError("config: expected a preset name or a dict, got %s"
                                    % type(config).__name__)
        config = dict(config)
        grid = None
        if tokens is not None:
            grid = [float(x) for x in _check.integers("tokens", tokens, 1, _TOKENS_MAX,
                                                      _POINTS_MAX)]
            config.setdefault("tokens", grid[0])
        reals = {}
        for name, v in (("noise", noise), ("prior", prior), ("option_prior", option_prior),
                        ("half_life", half_life), ("threshold", threshold),
                        ("margin", margin)):
            reals[name] = _check.number(name, v)  # the library checks the range
        o = _Options()
        o.schedules = _names(schedules, _SCHEDULES, "schedules")
        o.terms = _names(terms, _TERMS, "terms")
        for name, v in reals.items():
            setattr(o, name, v)
        if grid:
            self._grid = (_D * len(grid))(*grid)
            o.tokens, o.ntokens = self._grid, len(grid)
        err = XsError()
        cfg = MoeConfig()
        text = _check.json_text("config", config)
        _raise(lib.xs_moe_config_parse(text, len(text), b"config", ctypes.byref(cfg),
                                       ctypes.byref(err)), err)
        # what repr() and choose() say: the config, the profile, the grid
        self._config = config.get("preset", "config")
        self._profile = profile if isinstance(profile, str) else (
            profile.get("name", "profile") if isinstance(profile, dict) else str(profile))
        self._tokens = sorted(grid) if grid else [cfg.tokens]
        prof = ctypes.c_void_p()
        if isinstance(profile, dict):
            text = _check.json_text("profile", profile)
            st = lib.xs_profile_parse(text, len(text), b"profile", ctypes.byref(prof),
                                      ctypes.byref(err))
        else:
            st = lib.xs_profile_load(_check.path("profile", profile), ctypes.byref(prof),
                                     ctypes.byref(err))
        _raise(st, err)
        try:
            t = ctypes.c_void_p()
            _raise(lib.xs_tuner_create(ctypes.byref(cfg), prof, ctypes.byref(o),
                                       ctypes.byref(t), ctypes.byref(err)), err)
            self._t = t
        finally:
            lib.xs_profile_free(prof)

    def choose(self, tokens, outside="refuse"):
        """The option to launch for a batch of ``tokens`` per rank: a dict
        of "schedule", "rule", "knobs" (block_m, block_n and the schedule's
        own, as a plan's: experts_per_wave, warmup, or lag and group; a knob
        the schedule lacks is absent), "tokens" (the grid point it was made
        at), "predicted_s", "sd" (relative), "best_s", "explore" and
        "outside" (False, or what was done with a count past the grid).
        Whole numbers are int. A count outside the grid the tuner was built
        for (min to max of ``tokens``) is refused (InvalidInputError naming
        the grid) unless ``outside="nearest"``: the nearest end's choice, said
        so in "outside"."""
        if outside not in ("refuse", "nearest"):
            raise InvalidInputError("choose: outside: expected \"refuse\" or \"nearest\", "
                                    "got %r" % (outside,))
        t = _check.number("choose: tokens", tokens)
        lo, hi = self._tokens[0], self._tokens[-1]
        past = None
        if t == t and t > 0 and (t < lo or t > hi):
            past = "%g tokens is %s the grid (%g to %g tokens)" % (
                t, "below" if t < lo else "above", lo, hi)
            if outside == "refuse":
                raise InvalidInputError("choose: %s: the tuner chooses within the grid it "
                                        "was built for; build it with tokens that reach %g, "
                                        "or pass outside=\"nearest\" to take the nearest "
                                        "end's choice" % (past, t))
        c = _Choice()
        with self._lock:
            st = self._lib.xs_tuner_choose(self._handle(), t, ctypes.byref(c))
        if st:
            raise from_status(st, "choose: tokens %r: expected a positive count" % (tokens,)
                              if st == 1 else "choose: an observation in progress for over "
                              "0.1 s")
        rule = self._lib.xs_moe_rule_name(c.schedule, c.rule)
        schedule = _SCHEDULES[c.schedule]
        return Choice({"schedule": schedule, "rule": rule.decode() if rule else None,
                "knobs": _knobs_of(schedule, c.knobs), "tokens": _whole(c.tokens),
                "predicted_s": c.predicted_s, "sd": c.sd, "best_s": c.best_s,
                "explore": bool(c.explore),
                "outside": False if past is None else
                past + ": the choice of the nearest end, %g tokens" % _whole(c.tokens)},
                      {k: getattr(c.knobs, k) for k in _KNOBS})

    def __repr__(self):
        shown = ", ".join("%g" % t for t in self._tokens[:8]) + (
            ", ..." if len(self._tokens) > 8 else "")
        return ("xstage.Tuner(%r, %r, tokens=[%s], observations=%d, state_bytes=%d)"
                % (self._config, self._profile, shown,
                   self.observations if self._t else 0,
                   self.state_bytes if self._t else 0)) if self._t else \
            "xstage.Tuner(%r, %r, closed)" % (self._config, self._profile)

    def observe(self, tokens, choice, measured_s):
        """A launch of ``choice`` (a dict from :meth:`choose`, or one with
        "schedule" and "knobs", a dict of whole numbers; a knob left out is
        0, and an "order" of "all-l1-first" is the lag the library counts)
        at ``tokens`` took ``measured_s`` seconds (1e-9 to 1e6; the library
        refuses a time outside them)."""
        if not isinstance(choice, dict):
            raise ArgumentTypeError("observe: choice: expected the dict choose() returned, "
                                    "got %s" % type(choice).__name__)
        sched = _check.choice("observe: choice[\"schedule\"]", choice.get("schedule"),
                              _SCHEDULES)
        raw = getattr(choice, "pattern", None)
        if raw is not None:  # choose()'s own: the library's knob values
            knobs = _Pattern(**raw)
        else:  # a dict of the caller's: its knobs, an order as the lag it is
            given = choice.get("knobs")
            if isinstance(given, dict) and given.get("order") == "all-l1-first":
                given = {k: v for k, v in given.items() if k != "order"}
                given["lag"] = _LAG_ALL
                given.setdefault("group", 4)
            knobs = _knobs(given)
        n = _check.number("observe: tokens", tokens)
        secs = _check.number("observe: measured_s", measured_s)
        err = XsError()
        with self._lock:
            st = self._lib.xs_tuner_observe(self._handle(), n, _SCHEDULES.index(sched),
                                            ctypes.byref(knobs), secs, ctypes.byref(err))
        _raise(st, err)

    def term(self, name, tokens):
        """The factor the tuner believes for a term ("link", "gemm", ...)
        at the grid point of ``tokens`` and its relative uncertainty, or
        None for a term it does not learn."""
        term = _TERMS.index(_check.choice("term: name", name, _TERMS))
        n = _check.number("term: tokens", tokens)
        scale, sd = _D(), _D()
        with self._lock:
            st = self._lib.xs_tuner_term(self._handle(), n, term, ctypes.byref(scale),
                                         ctypes.byref(sd))
        if st == 6:  # NOTFOUND: a term it does not learn
            return None
        if st:
            raise from_status(st, "term: tokens %r: expected a positive count" % (tokens,)
                              if st == 1 else "term: an observation in progress for over "
                              "0.1 s")
        return (scale.value, sd.value)

    @property
    def observations(self):
        """Timings taken in so far."""
        with self._lock:
            return self._lib.xs_tuner_observations(self._handle())

    @property
    def state_bytes(self):
        """The tuner's memory, fixed when it was created."""
        with self._lock:
            return self._lib.xs_tuner_state_size(self._handle())

    def close(self):
        """Free the library's tuner (also on garbage collection); a call
        in progress on another thread finishes first."""
        lock = getattr(self, "_lock", None)
        if lock is None:  # __init__ failed before the tuner existed
            return
        with lock:
            if self._t:
                self._lib.xs_tuner_free(self._t)
                self._t = None

    def _handle(self):
        if not self._t:
            raise InvalidInputError("the tuner was closed")
        return self._t

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass
