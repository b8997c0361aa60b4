"""xstage: the Burst-Gap model of posted sends from fused GPU kernels, its
packet simulator and the MegaMoE and ring-attention planners, from Python.

A thin binding over libxstage (the core library: formats, models,
simulation, planners, validation) through ctypes. Every result is the
dict that the matching ``xstage ... --json`` command prints, made by the
same library code; every failure raises :class:`xstage.Error` with
xstage's own message (file, position, what was wrong) and status name.

Example::

    import xstage
    prog = {"name": "two sends", "workers": [
        {"name": "sm0", "ops": [{"send": 4e6}, {"compute": 1e-3}, {"send": 1e6}]}]}
    r = xstage.predict(prog, "h200-nvlink")
    print(r["makespan_s"])
"""

import ctypes
import ctypes.util
import glob
import json
import os
import sys

__all__ = [
    "Error", "Profile", "Program", "version", "library_path", "profiles",
    "profile", "program", "predict", "simulate", "plan_megamoe",
    "plan_megamoe_table", "plan_flashattn", "plan_flashattn_table",
    "sweep_megamoe", "sweep_flashattn", "validate_megamoe",
    "validate_flashattn", "moe_presets", "fa_presets", "MOE_SCHEDULES",
]

# xs_status, in the numbering of xstage.h's XS_STATUS_MAP (never changes)
_STATUS = ["OK", "INVALID", "PARSE", "NOMEM", "IO", "CYCLE", "NOTFOUND",
           "NOTBUILT", "NODEV", "TIMEOUT", "INTERNAL"]

MOE_SCHEDULES = ["sequential", "baseline", "searched", "fused-split",
                 "fused-wave", "fused-interleaved", "fused-lag"]


class Error(Exception):
    """A failure reported by libxstage.

    ``message`` is xstage's text ("prog.json:4:17: workers[0].ops[2].send:
    expected ..."), ``status`` the status name ("INVALID", "PARSE", ...),
    ``code`` its number.
    """

    def __init__(self, message, status="INVALID"):
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = _STATUS.index(status) if status in _STATUS else -1

    def __str__(self):
        return "%s [%s]" % (self.message, self.status)


# ---- finding and loading the library ----

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_NAMES = ("libxstage.so",)  # then libxstage.so.MAJOR.MINOR... in each folder


def _multiarch():
    arch = getattr(sys.implementation, "_multiarch", None)
    return [arch] if arch else []


def _candidates():
    """Where to look, in order: (description, path or name)."""
    out = []
    out.append(("XSTAGE_LIBRARY", os.environ.get("XSTAGE_LIBRARY")))
    found = ctypes.util.find_library("xstage")
    out.append(("ctypes.util.find_library('xstage')", found))
    # installed beside the package: cmake --install puts the package in
    # LIBDIR/python3/dist-packages, the library in LIBDIR
    dirs = [os.path.normpath(os.path.join(_PKG_DIR, "..", "..", ".."))]
    prefix = _PKG_DIR
    for _ in range(6):
        prefix = os.path.dirname(prefix)
        for sub in ["lib", "lib64"] + [os.path.join("lib", a) for a in _multiarch()]:
            dirs.append(os.path.join(prefix, sub))
    seen = set()
    for d in dirs:
        if d in seen:
            continue
        seen.add(d)
        for n in _NAMES:
            out.append(("installed prefix", os.path.join(d, n)))
        # a run-time install has only the versioned name (the SONAME)
        for v in sorted(glob.glob(os.path.join(d, "libxstage.so.*")), reverse=True):
            out.append(("installed prefix", v))
    # the build tree of a source checkout: <repo>/python/xstage -> <repo>/build
    out.append(("build tree", os.path.normpath(
        os.path.join(_PKG_DIR, "..", "..", "build", "libxstage.so"))))
    return out


def _load():
    tried, prefix_dirs = [], []
    asked = os.environ.get("XSTAGE_LIBRARY")
    if asked:  # asked for: that library or none
        try:
            lib = ctypes.CDLL(asked)
        except OSError as e:
            raise ImportError("xstage: XSTAGE_LIBRARY=%s cannot be loaded: %s" % (asked, e))
        if not hasattr(lib, "xs_validate_json"):
            raise ImportError("xstage: XSTAGE_LIBRARY=%s is not a libxstage this package "
                              "can use (no xs_validate_json)" % asked)
        return lib, asked
    for what, path in _candidates():
        if not path:
            tried.append("%s: %s" % (what, "not set" if what == "XSTAGE_LIBRARY"
                                     else "nothing found"))
            continue
        if os.sep in path and not os.path.exists(path):
            if what != "installed prefix":
                tried.append("%s: %s (no such file)" % (what, path))
            elif os.path.dirname(path) not in prefix_dirs:
                prefix_dirs.append(os.path.dirname(path))
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s: %s (%s)" % (what, path, e))
            continue
        if not hasattr(lib, "xs_validate_json"):
            tried.append("%s: %s (too old: no xs_validate_json)" % (what, path))
            continue
        return lib, path
    raise ImportError(
        "xstage: libxstage.so not found or not loadable. Looked in:\n  "
        + "\n  ".join(tried[:2] + ["installed prefix: " + ", ".join(prefix_dirs)]
                       + tried[2:])
        + "\nBuild it (cmake -S . -B build && cmake --build build), install it "
        "(cmake --install build), or set XSTAGE_LIBRARY to its path.")


_lib, _lib_path = _load()


class _XsError(ctypes.Structure):
    _fields_ = [("status", ctypes.c_int), ("message", ctypes.c_char * 1024)]


class _MoeConfig(ctypes.Structure):
    """xs_moe_config of xstage.h, field for field."""
    _fields_ = [("name", ctypes.c_char * 64)] + [
        (f, ctypes.c_double) for f in (
            "tokens", "hidden", "intermediate", "experts", "topk", "ep",
            "act_bytes", "combine_bytes", "weight_bytes", "shared_experts",
            "block_m", "block_n", "sms", "imbalance", "capacity", "sm_groups")
    ] + [("dtype", ctypes.c_char * 16), ("ep_library", ctypes.c_char * 24),
         ("ep_kernel", ctypes.c_char * 16)]


class _FaConfig(ctypes.Structure):
    """xs_fa_config of xstage.h, field for field."""
    _fields_ = [
        ("name", ctypes.c_char * 64), ("seq", ctypes.c_double),
        ("heads_q", ctypes.c_double), ("heads_kv", ctypes.c_double),
        ("head_dim", ctypes.c_double), ("cp", ctypes.c_double),
        ("causal", ctypes.c_int), ("bytes", ctypes.c_double),
        ("block_m", ctypes.c_double), ("block_n", ctypes.c_double),
        ("sms", ctypes.c_double), ("dtype", ctypes.c_char * 16),
        ("batch", ctypes.c_double), ("layout", ctypes.c_int),
        ("backward", ctypes.c_int), ("kernel", ctypes.c_char * 8),
    ]


class _MoeTableOptions(ctypes.Structure):
    _fields_ = [("tokens", ctypes.POINTER(ctypes.c_double)), ("ntokens", ctypes.c_size_t),
                ("min_tokens", ctypes.c_double), ("max_tokens", ctypes.c_double),
                ("tolerance", ctypes.c_double), ("schedules", ctypes.c_uint)]


class _SimOptions(ctypes.Structure):
    _fields_ = [("packet_B", ctypes.c_double), ("arbitration", ctypes.c_int),
                ("summary_only", ctypes.c_int), ("timeline", ctypes.c_void_p),
                ("max_packets", ctypes.c_double)]


class _ValidateSet(ctypes.Structure):
    _fields_ = [("rows", ctypes.c_void_p), ("nrows", ctypes.c_size_t)]


_P = ctypes.c_void_p
_S = ctypes.c_char_p
_Z = ctypes.c_size_t
_D = ctypes.c_double
_E = ctypes.POINTER(_XsError)
_OUT = ctypes.POINTER(ctypes.c_void_p)
_I = ctypes.c_int


def _fn(name, restype, *argtypes):
    f = getattr(_lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


_xs_version = _fn("xs_version", _S)
_xs_free = _fn("xs_free", None, _P)
_xs_struct_size = _fn("xs_struct_size", _Z, _S)
_xs_profile_load = _fn("xs_profile_load", _I, _S, _OUT, _E)
_xs_profile_parse = _fn("xs_profile_parse", _I, _S, _Z, _S, _OUT, _E)
_xs_profile_free = _fn("xs_profile_free", None, _P)
_xs_profile_name = _fn("xs_profile_name", _S, _P)
_xs_profile_to_json = _fn("xs_profile_to_json", _P, _P)
_xs_builtin_profile_count = _fn("xs_builtin_profile_count", _Z)
_xs_builtin_profile_name = _fn("xs_builtin_profile_name", _S, _Z)
_xs_program_parse = _fn("xs_program_parse", _I, _S, _Z, _S, _OUT, _E)
_xs_program_load = _fn("xs_program_load", _I, _S, _OUT, _E)
_xs_program_free = _fn("xs_program_free", None, _P)
_xs_program_to_json = _fn("xs_program_to_json", _P, _P)
_xs_model_from_name = _fn("xs_model_from_name", _I, _S, ctypes.POINTER(_I))
_xs_evaluate = _fn("xs_evaluate", _I, _P, _P, _I, _P, _OUT, _E)
_xs_simulate = _fn("xs_simulate", _I, _P, _P, ctypes.POINTER(_SimOptions), _OUT, _E)
_xs_result_free = _fn("xs_result_free", None, _P)
_xs_report_json = _fn("xs_report_json", _P, _P, _P, ctypes.POINTER(_P), _Z)
_xs_moe_preset_count = _fn("xs_moe_preset_count", _Z)
_xs_moe_preset_name = _fn("xs_moe_preset_name", _S, _Z)
_xs_moe_config_parse = _fn("xs_moe_config_parse", _I, _S, _Z, _S,
                           ctypes.POINTER(_MoeConfig), _E)
_xs_moe_config_check = _fn("xs_moe_config_check", _I, ctypes.POINTER(_MoeConfig), _E)
_xs_moe_schedule_from_name = _fn("xs_moe_schedule_from_name", _I, _S)
_xs_moe_plan_json = _fn("xs_moe_plan_json", _I, ctypes.POINTER(_MoeConfig), _P, _D,
                        ctypes.c_uint, _I, _P, _OUT, _E)
_xs_moe_plan_table = _fn("xs_moe_plan_table", _I, ctypes.POINTER(_MoeConfig), _P,
                         ctypes.POINTER(_MoeTableOptions), _OUT, _E)
_xs_moe_table_free = _fn("xs_moe_table_free", None, _P)
_xs_moe_table_json = _fn("xs_moe_table_json", _I, _P, ctypes.POINTER(_MoeConfig), _P,
                         _D, _OUT, _E)
_xs_fa_preset_count = _fn("xs_fa_preset_count", _Z)
_xs_fa_preset_name = _fn("xs_fa_preset_name", _S, _Z)
_xs_fa_config_parse = _fn("xs_fa_config_parse", _I, _S, _Z, _S,
                          ctypes.POINTER(_FaConfig), _E)
_xs_fa_config_check = _fn("xs_fa_config_check", _I, ctypes.POINTER(_FaConfig), _E)
_xs_fa_layout_from_name = _fn("xs_fa_layout_from_name", _I, _S)
_xs_fa_plan_json = _fn("xs_fa_plan_json", _I, ctypes.POINTER(_FaConfig), _P, _P, _OUT, _E)
_xs_fa_table = _fn("xs_fa_table", _I, ctypes.POINTER(_FaConfig), _P,
                   ctypes.POINTER(_D), _Z, _D, _P, ctypes.POINTER(_Z), _E)
_xs_fa_table_json = _fn("xs_fa_table_json", _I, ctypes.POINTER(_FaConfig), _P, _P, _Z,
                        _D, _OUT, _E)
_xs_moe_sweep_grid = _fn("xs_moe_sweep_grid", _I, _S, _Z, _S, _OUT, ctypes.POINTER(_Z), _E)
_xs_fa_sweep_grid = _fn("xs_fa_sweep_grid", _I, _S, _Z, _S, _OUT, ctypes.POINTER(_Z), _E)
_xs_moe_sweep_json = _fn("xs_moe_sweep_json", _I, _P, _P, _Z, _P, _OUT, _E)
_xs_fa_sweep_json = _fn("xs_fa_sweep_json", _I, _P, _P, _Z, _P, _OUT, _E)
_xs_validate_megamoe = _fn("xs_validate_megamoe", _I, _S, _Z, _S,
                           ctypes.POINTER(_ValidateSet), _P, _P, _E)
_xs_validate_flashattn = _fn("xs_validate_flashattn", _I, _S, _Z, _S,
                             ctypes.POINTER(_ValidateSet), _P, _P, _E)
_xs_validate_free = _fn("xs_validate_free", None, ctypes.POINTER(_ValidateSet))
_xs_validate_json = _fn("xs_validate_json", _I, ctypes.POINTER(_ValidateSet), _OUT, _E)


def _b(s):
    return s.encode("utf-8") if isinstance(s, str) else s


def _check(status, err):
    if status:
        name = _STATUS[status] if 0 <= status < len(_STATUS) else str(status)
        raise Error(err.message.decode("utf-8", "replace"), name)


def _take_text(ptr):
    """A malloc'd char * from the library as str, freed."""
    if not ptr:
        raise Error("out of memory, or a name that is not UTF-8", "NOMEM")
    try:
        return ctypes.string_at(ptr).decode("utf-8")
    finally:
        _xs_free(ptr)


def _take_json(ptr):
    return json.loads(_take_text(ptr))


def _call_json(fn, *args):
    """fn(*args, char **out, xs_error *err) -> the parsed document"""
    out = ctypes.c_void_p()
    err = _XsError()
    _check(fn(*args, ctypes.byref(out), ctypes.byref(err)), err)
    return _take_json(out)


def version():
    """The version of the libxstage loaded ("0.2.0")."""
    return _xs_version().decode()


def library_path():
    """The path (or name) of the libxstage that was loaded."""
    return _lib_path


# ---- profiles ----

def profiles():
    """The names of the built-in profiles, in name order."""
    return [_xs_builtin_profile_name(i).decode()
            for i in range(_xs_builtin_profile_count())]


class Profile:
    """A profile: channels (R_inj, R_drain, C, L, ...) and, for the
    planners, the compute section. Make one with :func:`profile`."""

    def __init__(self, handle):
        self._h = handle
        self._free = _xs_profile_free

    def __del__(self):
        h, self._h = getattr(self, "_h", None), None
        if h:
            self._free(h)

    @classmethod
    def load(cls, name_or_path):
        """A built-in profile by name, or a profile JSON file."""
        h = ctypes.c_void_p()
        err = _XsError()
        _check(_xs_profile_load(_b(os.fspath(name_or_path)), ctypes.byref(h),
                                ctypes.byref(err)), err)
        return cls(h)

    @classmethod
    def from_json(cls, text, filename="<profile>"):
        data = _b(text)
        h = ctypes.c_void_p()
        err = _XsError()
        _check(_xs_profile_parse(data, len(data), _b(filename), ctypes.byref(h),
                                 ctypes.byref(err)), err)
        return cls(h)

    @classmethod
    def from_dict(cls, d):
        """A profile from the dict of its JSON (docs/formats.md)."""
        return cls.from_json(json.dumps(d, indent=1, allow_nan=False), "<profile dict>")

    @property
    def name(self):
        return _xs_profile_name(self._h).decode()

    def to_dict(self):
        """The profile's JSON as a dict (numbers exactly)."""
        return _take_json(_xs_profile_to_json(self._h))

    def __repr__(self):
        return "xstage.Profile(%r)" % self.name


def profile(p):
    """A Profile from a Profile, a built-in name, a path or a dict."""
    if isinstance(p, Profile):
        return p
    if isinstance(p, dict):
        return Profile.from_dict(p)
    if isinstance(p, (str, bytes, os.PathLike)):
        return Profile.load(p)
    raise TypeError("a profile is a built-in name, a path, a dict or an xstage.Profile, "
                    "not %s" % type(p).__name__)


# ---- programs ----

class Program:
    """A finished program (workers of compute, send, wait and fence ops).
    Make one with :func:`program`."""

    def __init__(self, handle):
        self._h = handle
        self._free = _xs_program_free

    def __del__(self):
        h, self._h = getattr(self, "_h", None), None
        if h:
            self._free(h)

    @classmethod
    def from_json(cls, text, filename="<program>"):
        data = _b(text)
        h = ctypes.c_void_p()
        err = _XsError()
        _check(_xs_program_parse(data, len(data), _b(filename), ctypes.byref(h),
                                 ctypes.byref(err)), err)
        return cls(h)

    @classmethod
    def load(cls, path):
        h = ctypes.c_void_p()
        err = _XsError()
        _check(_xs_program_load(_b(os.fspath(path)), ctypes.byref(h), ctypes.byref(err)), err)
        return cls(h)

    def to_dict(self):
        return _take_json(_xs_program_to_json(self._h))


def program(p, name="program"):
    """A Program from a Program, a dict (program JSON: {"name", "workers"}),
    a list of workers ({"name", "ops": [...]}) or a path to a JSON file.
    Dicts and lists are serialised to program JSON and parsed by the
    library, so its messages name the place ("workers[0].ops[1].send")."""
    if isinstance(p, Program):
        return p
    if isinstance(p, list):
        p = {"name": name, "workers": p}
    if isinstance(p, dict):
        return Program.from_json(json.dumps(p, indent=1, allow_nan=False),
                                 "<program %s>" % p.get("name", name))
    if isinstance(p, (str, bytes, os.PathLike)):
        return Program.load(p)
    raise TypeError("a program is a dict, a list of workers, a path or an "
                    "xstage.Program, not %s" % type(p).__name__)


_MODELS = ["burstgap", "blocking", "serial", "ideal"]


def predict(prog, prof, model="burstgap"):
    """Evaluate a program on a profile under one model ("burstgap",
    "blocking", "serial", "ideal"): the model's object of `xstage predict
    --json` (makespan_s, issue_done_s, workers, sends, channels; serial and
    ideal have makespan_s only). model="all": {model name: object}."""
    pg, pf = program(prog), profile(prof)
    names = _MODELS if model == "all" else [model]
    results = []
    err = _XsError()
    try:
        for m in names:
            k = _I()
            if _xs_model_from_name(_b(m), ctypes.byref(k)) != 0 or k.value >= 4:
                raise Error("model: expected burstgap, blocking, serial, ideal or all, "
                            "got \"%s\"" % m, "INVALID")
            r = ctypes.c_void_p()
            _check(_xs_evaluate(pg._h, pf._h, k.value, None, ctypes.byref(r),
                                ctypes.byref(err)), err)
            results.append(r)
        arr = (_P * len(results))(*[r.value for r in results])
        doc = _take_json(_xs_report_json(pg._h, pf._h, arr, len(results)))
    finally:
        for r in results:
            _xs_result_free(r)
    models = doc["models"]
    return models if model == "all" else models[model]


def simulate(prog, prof, packet_B=0, arbitration="rr", max_packets=0):
    """Simulate a program at packet level (docs/simulate.md): the "sim"
    model object of `xstage simulate --json`. packet_B 0: each channel's
    packet size (else 256 B); arbitration "rr" or "fifo"."""
    pg, pf = program(prog), profile(prof)
    arb = {"rr": 0, "fifo": 1}.get(arbitration)
    if arb is None:
        raise Error("arbitration: expected rr or fifo, got \"%s\"" % arbitration, "INVALID")
    opts = _SimOptions(float(packet_B), arb, 0, None, float(max_packets))
    r = ctypes.c_void_p()
    err = _XsError()
    _check(_xs_simulate(pg._h, pf._h, ctypes.byref(opts), ctypes.byref(r),
                        ctypes.byref(err)), err)
    try:
        arr = (_P * 1)(r.value)
        doc = _take_json(_xs_report_json(pg._h, pf._h, arr, 1))
    finally:
        _xs_result_free(r)
    return doc["models"]["sim"]


# ---- planners ----

def moe_presets():
    return [_xs_moe_preset_name(i).decode() for i in range(_xs_moe_preset_count())]


def fa_presets():
    return [_xs_fa_preset_name(i).decode() for i in range(_xs_fa_preset_count())]


def _config_text(config, presets):
    """(JSON text, filename) of a config given as a preset name, a dict or
    a path to a JSON file."""
    if isinstance(config, dict):
        return json.dumps(config, indent=1, allow_nan=False), "<config>"
    if isinstance(config, str) and config in presets:
        return json.dumps({"preset": config}), "<preset %s>" % config
    if isinstance(config, (str, os.PathLike)):
        path = os.fspath(config)
        try:
            with open(path, "rb") as f:
                return f.read(), path
        except OSError as e:
            raise Error("%s: not a preset (%s) and cannot be read: %s"
                        % (path, ", ".join(presets), e.strerror), "IO") from None
    raise TypeError("a config is a preset name, a dict or a path, not %s"
                    % type(config).__name__)


def _moe_config(config, tokens=None, ep=None):
    text, fname = _config_text(config, moe_presets())
    data = _b(text)
    c = _MoeConfig()
    err = _XsError()
    _check(_xs_moe_config_parse(data, len(data), _b(fname), ctypes.byref(c),
                                ctypes.byref(err)), err)
    if tokens is not None:
        c.tokens = float(tokens)
    if ep is not None:
        c.ep = float(ep)
    _check(_xs_moe_config_check(ctypes.byref(c), ctypes.byref(err)), err)
    return c


def _schedule_mask(schedules):
    if not schedules:
        return 0
    if isinstance(schedules, str):
        schedules = schedules.split(",")
    mask = 0
    for s in schedules:
        k = _xs_moe_schedule_from_name(_b(s))
        if k < 0:
            raise Error("schedules: \"%s\" is not a schedule (%s)"
                        % (s, ", ".join(MOE_SCHEDULES)), "INVALID")
        mask |= 1 << k
    return mask


def plan_megamoe(config, prof, tokens=None, ep=None, tolerance=0.01, schedules=None,
                 sensitivity=False):
    """Plan one rank of an expert-parallel MoE layer (docs/plan-megamoe.md):
    the dict of `xstage plan megamoe --json` (every schedule's times, knobs
    and breakdown, and "recommended": the option a kernel should follow).
    config: a preset name, a dict of config keys (with "preset" for the
    rest) or a JSON file; tokens and ep override it."""
    c = _moe_config(config, tokens, ep)
    pf = profile(prof)
    return _call_json(_xs_moe_plan_json, ctypes.byref(c), pf._h, float(tolerance),
                      _schedule_mask(schedules), 1 if sensitivity else 0, None)


def plan_megamoe_table(config, prof, tokens=None, tokens_range=None, ep=None,
                       tolerance=0.01, schedules=None):
    """A knob table over token counts (`xstage plan megamoe --tokens-grid
    --json` with tokens, a list of ascending whole numbers, or
    `--tokens-range` with tokens_range=(min, max))."""
    if (tokens is None) == (tokens_range is None):
        raise Error("give one of tokens (a list) and tokens_range (min, max)", "INVALID")
    c = _moe_config(config, None, ep)
    pf = profile(prof)
    opts = _MoeTableOptions()
    if tokens is not None:
        grid = (_D * len(tokens))(*[float(t) for t in tokens])
        opts.tokens, opts.ntokens = grid, len(tokens)
    else:
        opts.min_tokens, opts.max_tokens = float(tokens_range[0]), float(tokens_range[1])
    opts.tolerance = float(tolerance)
    opts.schedules = _schedule_mask(schedules)
    t = ctypes.c_void_p()
    err = _XsError()
    _check(_xs_moe_plan_table(ctypes.byref(c), pf._h, ctypes.byref(opts), ctypes.byref(t),
                              ctypes.byref(err)), err)
    try:
        return _call_json(_xs_moe_table_json, t, ctypes.byref(c), pf._h, float(tolerance))
    finally:
        _xs_moe_table_free(t)


def _fa_config(config, seq=None, cp=None, causal=None, kernel=None, layout=None,
               backward=None):
    text, fname = _config_text(config, fa_presets())
    data = _b(text)
    c = _FaConfig()
    err = _XsError()
    _check(_xs_fa_config_parse(data, len(data), _b(fname), ctypes.byref(c),
                               ctypes.byref(err)), err)
    if seq is not None:
        c.seq = float(seq)
    if cp is not None:
        c.cp = float(cp)
    if causal is not None:
        c.causal = 1 if causal else 0
    if kernel is not None:
        if kernel not in ("fa2", "fa3", "fa4"):
            raise Error("kernel: expected fa2, fa3 or fa4, got \"%s\"" % kernel, "INVALID")
        c.kernel = _b(kernel)
    if layout is not None:
        k = _xs_fa_layout_from_name(_b(layout))
        if k < 0:
            raise Error("layout: expected contiguous, zigzag or stripe, got \"%s\""
                        % layout, "INVALID")
        c.layout = k
    if backward is not None:
        c.backward = 1 if backward else 0
    _check(_xs_fa_config_check(ctypes.byref(c), ctypes.byref(err)), err)
    return c


def plan_flashattn(config, prof, seq=None, cp=None, causal=None, kernel=None,
                   layout=None, backward=None):
    """Plan ring attention's KV forwarding (docs/plan-flashattn.md): the
    dict of `xstage plan flashattn --json`. config: a preset name
    (llama3-8b, llama3-70b, mha), a dict or a JSON file."""
    c = _fa_config(config, seq, cp, causal, kernel, layout, backward)
    pf = profile(prof)
    return _call_json(_xs_fa_plan_json, ctypes.byref(c), pf._h, None)


class _FaRing(ctypes.Structure):
    _fields_ = [("path", ctypes.c_int), ("layout", ctypes.c_int), ("time_s", _D),
                ("compute_s", _D), ("merge_s", _D), ("fixed_s", _D), ("exposed_s", _D),
                ("imbalance_s", _D), ("forward_sms", ctypes.c_uint),
                ("spread", ctypes.c_uint), ("bound", _S)]


class _FaTableRow(ctypes.Structure):
    _fields_ = [("seq", _D), ("chosen", _FaRing), ("fastest", _FaRing), ("near", _Z)]


def _check_layouts():
    """The structs mirrored here against the library's own sizes: a
    library built from another xstage.h would otherwise be read wrongly."""
    for cname, mirror in (("xs_error", _XsError), ("xs_moe_config", _MoeConfig),
                          ("xs_fa_config", _FaConfig),
                          ("xs_moe_table_options", _MoeTableOptions),
                          ("xs_sim_options", _SimOptions), ("xs_fa_ring", _FaRing),
                          ("xs_fa_table_row", _FaTableRow)):
        want = _xs_struct_size(cname.encode())
        if want != ctypes.sizeof(mirror):
            raise ImportError("xstage: %s is %d bytes in %s, %d in this binding: "
                              "the library and the Python package are from different "
                              "versions" % (cname, want, _lib_path, ctypes.sizeof(mirror)))


_check_layouts()


def plan_flashattn_table(config, prof, seq, tolerance=0.01, cp=None, causal=None,
                         kernel=None, layout=None, backward=None):
    """Per tokens per rank in seq, the ring the model predicts fastest, kept
    while within tolerance (`xstage plan flashattn --seq-grid --json`)."""
    c = _fa_config(config, None, cp, causal, kernel, layout, backward)
    pf = profile(prof)
    n = len(seq)
    grid = (_D * n)(*[float(s) for s in seq])
    rows = (_FaTableRow * n)()
    err = _XsError()
    _check(_xs_fa_table(ctypes.byref(c), pf._h, grid, n, float(tolerance), rows, None,
                        ctypes.byref(err)), err)
    return _call_json(_xs_fa_table_json, ctypes.byref(c), pf._h, rows, n, float(tolerance))


def _grid_text(grid):
    if grid is None:
        return None, None
    if isinstance(grid, dict):
        return _b(json.dumps(grid, indent=1, allow_nan=False)), b"<grid>"
    path = os.fspath(grid)
    try:
        with open(path, "rb") as f:
            return f.read(), _b(path)
    except OSError as e:
        raise Error("%s: %s" % (path, e.strerror or e), "IO") from None


def _sweep(grid, prof, grid_fn, json_fn):
    text, fname = _grid_text(grid)
    pf = profile(prof)
    configs = ctypes.c_void_p()
    n = _Z()
    err = _XsError()
    _check(grid_fn(text, len(text) if text else 0, fname, ctypes.byref(configs),
                   ctypes.byref(n), ctypes.byref(err)), err)
    try:
        return _call_json(json_fn, pf._h, configs, n.value, None)
    finally:
        _xs_free(configs)


def sweep_megamoe(prof, grid=None):
    """`xstage sweep megamoe --json`: every config of a grid planned. grid:
    None (the 7 presets x 12 token counts at EP 8), a dict {"presets",
    "tokens", "ep"} or a JSON file."""
    return _sweep(grid, prof, _xs_moe_sweep_grid, _xs_moe_sweep_json)


def sweep_flashattn(prof, grid=None):
    """`xstage sweep flashattn --json`. grid: None (90 configs), a dict
    {"presets", "seq", "cp", "causal"} or a JSON file."""
    return _sweep(grid, prof, _xs_fa_sweep_grid, _xs_fa_sweep_json)


def _validate(data_path, fn):
    path = os.fspath(data_path)
    try:
        with open(path, "rb") as f:
            text = f.read()
    except OSError as e:
        raise Error("%s: cannot open: %s" % (path, e.strerror), "IO") from None
    s = _ValidateSet()
    err = _XsError()
    _check(fn(text, len(text), _b(path), ctypes.byref(s), None, None, ctypes.byref(err)), err)
    try:
        return _call_json(_xs_validate_json, ctypes.byref(s))
    finally:
        _xs_validate_free(ctypes.byref(s))


def validate_megamoe(data_path):
    """`xstage validate megamoe --data FILE --json`: every row of a CSV of
    published MegaMoE timings predicted; {"rows": [...], "summary": {...}}."""
    return _validate(data_path, _xs_validate_megamoe)


def validate_flashattn(data_path):
    """`xstage validate flashattn --data FILE --json` (ring attention)."""
    return _validate(data_path, _xs_validate_flashattn)
