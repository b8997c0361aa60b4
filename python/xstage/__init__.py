"""xstage: the Burst-Gap model of posted sends from fused GPU kernels, its
packet simulator and the MegaMoE and ring-attention planners, from Python.

A binding over libxstage (the core library: formats, models, simulation,
planners, validation) through ctypes. Results are frozen dataclasses over
the documents that the matching ``xstage ... --json`` command prints, made
by the same library code (``r.to_dict()`` is that document); whole numbers
are ``int``. Every failure is an :class:`xstage.Error` and the built-in
exception it stands for (``FileNotFoundError``, ``ValueError``,
``TypeError``...), with xstage's message: the file, line and column, or
the argument, of what was wrong. Arguments are checked in Python before
they reach the library.

Example::

    import xstage
    plan = xstage.plan_megamoe("deepseek-v3", "h200-nvlink", tokens=4096)
    print(plan.config.tokens, plan.recommended.chosen)
"""
import ctypes
import json
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import _check, _lib
from ._errors import (ArgumentTypeError, DeadlineError, Error, InputOutputError,
                      InternalError, InvalidInputError, NotAvailableError, NotFoundError,
                      OutOfMemoryError, ParseError, from_os_error)
from ._errors import raise_status as _raise
from ._results import (Call, ChannelUse, FAPlan, FATable, Knobs, MoEConfig, MoEFit, MoEPlan,
                       MoESchedule, MoETable, Option, Prediction, Recommendation, Result,
                       SendTime, Sweep, Tabular, Validation, ValidationRow, WorkerTime,
                       format_time)
from ._version import __version__

__all__ = [
    "Error", "InvalidInputError", "ParseError", "ArgumentTypeError", "NotFoundError",
    "InputOutputError", "OutOfMemoryError", "NotAvailableError", "DeadlineError",
    "InternalError",
    "Profile", "Program", "version", "library_path", "profiles", "profile", "program",
    "predict", "simulate", "plan_megamoe", "plan_megamoe_table", "plan_flashattn",
    "plan_flashattn_table", "sweep_megamoe", "sweep_flashattn", "validate_megamoe",
    "validate_flashattn", "validate_ep", "fit_megamoe", "prediction_interval", "moe_presets",
    "fa_presets", "data_dir", "data_file", "MOE_SCHEDULES", "MODELS", "EP_LIBRARIES",
    "EP_KERNELS", "Tuner",
    "Result", "Tabular", "Prediction", "WorkerTime", "SendTime", "ChannelUse", "MoEConfig",
    "Knobs", "Call", "MoESchedule", "Option", "Recommendation", "MoEPlan", "MoETable", "FAPlan",
    "FATable", "Sweep", "ValidationRow", "Validation", "MoEFit", "format_time",
    "__version__",
]

# what the arguments may be (the argument layer checks them at run time)
PathLike = Union[str, bytes, "os.PathLike[str]"]
ProfileLike = Union["Profile", str, bytes, "os.PathLike[str]", Mapping]
ProgramLike = Union["Program", Mapping, Sequence, str, bytes, "os.PathLike[str]"]
ConfigLike = Union[str, Mapping, "os.PathLike[str]"]
Numbers = Sequence[int]  # or a one-dimensional numpy array

MOE_SCHEDULES = ("sequential", "l1-then-l2", "searched", "fused-split", "fused-wave",
                 "fused-interleaved", "fused-lag")
MODELS = ("burstgap", "blocking", "serial", "ideal")

# the bounds of xs_moe_config_check and xs_fa_config_check, for messages
# that name the argument before the library sees it
_TOKENS_MAX = 10_000_000
_SEQ_MAX = 1_000_000_000
_TABLE_MAX = 4096  # XS_MOE_TABLE_MAX


def _take_text(ptr):
    """A malloc'd char * from the library as str, freed."""
    if not ptr:
        raise OutOfMemoryError("out of memory, or a name that is not UTF-8", "NOMEM")
    try:
        return ctypes.string_at(ptr).decode("utf-8")
    finally:
        _lib.xs_free(ptr)


def _take_json(ptr):
    return json.loads(_take_text(ptr))


def _call_out(fn, *args, filename=None):
    """fn(*args, T **out, xs_error *err) -> out (a c_void_p), or the
    exception for its status (naming filename where the library's does)"""
    out = ctypes.c_void_p()
    err = _lib.XsError()
    _raise(fn(*args, ctypes.byref(out), ctypes.byref(err)), err, filename)
    return out


def _call_json(fn, *args):
    """fn(*args, char **out, xs_error *err) -> the parsed document"""
    return _take_json(_call_out(fn, *args))


# the most this package reads of a config, grid or CSV file, as the
# command does (CLI_INPUT_LIMIT): /dev/zero grew the process to 24 GB
_READ_LIMIT = 64 << 20


def _read(name, value):
    """(bytes, path) of a file argument that this package reads itself, at
    most _READ_LIMIT bytes of it (a larger file is refused, having read one
    byte past the limit at most)."""
    p = _check.path(name, value)
    shown = p.decode("utf-8", "replace")
    try:
        with open(p, "rb") as f:
            data = f.read(_READ_LIMIT + 1)
    except OSError as e:
        raise from_os_error(e, shown) from None
    if len(data) > _READ_LIMIT:
        raise InvalidInputError("%s: %s: larger than the limit of %d MiB for this input"
                                % (name, shown, _READ_LIMIT >> 20))
    return data, p


def version() -> str:
    """The version of the libxstage loaded ("0.2.0")."""
    return _lib.xs_version().decode()


def library_path() -> str:
    """The path (or name) of the libxstage that was loaded."""
    return _lib.lib_path


# ---- installed data ----

def data_dir() -> str:
    """The folder of xstage's data (published/, examples/, profiles/):
    XSTAGE_DATA_DIR, then share/xstage of the environment this package is
    installed in (pip: sys.prefix; cmake --install: the prefix above the
    package), then the source tree's (data/ and examples/ of a checkout).
    NotFoundError when there is none."""
    import sys
    tried = []
    env = os.environ.get("XSTAGE_DATA_DIR")
    if env:
        tried.append(env)
    tried.append(os.path.join(sys.prefix, "share", "xstage"))
    up = _lib.PKG_DIR
    for _ in range(5):
        up = os.path.dirname(up)
        tried.append(os.path.join(up, "share", "xstage"))
    for d in tried:
        if os.path.isdir(os.path.join(d, "published")):
            return d
    src = os.path.normpath(os.path.join(_lib.PKG_DIR, "..", ".."))
    if os.path.isdir(os.path.join(src, "data", "published")):
        return src
    raise NotFoundError("xstage: no installed data (published/) in %s, nor a source tree "
                        "at %s: set XSTAGE_DATA_DIR" % (", ".join(tried), src))


def data_file(name: str) -> str:
    """A file of xstage's data by name: "published/megamoe.csv",
    "examples/hol.json", "profiles/h200-nvlink.json"."""
    rel = _check.text("name", name).decode()
    d = data_dir()
    p = os.path.join(d, rel)
    if not os.path.exists(p) and rel.startswith("published/"):
        p = os.path.join(d, "data", rel)  # a source tree keeps it under data/
    if not os.path.exists(p):
        raise NotFoundError("%s: no such data file under %s" % (rel, d), filename=p)
    return p


# ---- profiles ----

def profiles() -> List[str]:
    """The names of the built-in profiles, in name order."""
    return [_lib.xs_builtin_profile_name(i).decode()
            for i in range(_lib.xs_builtin_profile_count())]


class Profile:
    """A profile: channels (R_inj, R_drain, C, L, ...) and, for the
    planners, the compute section. Make one with :func:`profile`."""

    def __init__(self, handle):
        if not isinstance(handle, ctypes.c_void_p) or not handle:
            raise ArgumentTypeError("Profile: make one with xstage.profile(name, path or "
                                    "dict), not Profile(%r)" % (handle,))
        self._h = handle

    def __del__(self):
        h, self._h = getattr(self, "_h", None), None
        if h:
            _lib.xs_profile_free(h)

    @classmethod
    def load(cls, name_or_path):
        """A built-in profile by name, or a profile JSON file."""
        raw = _check.path("profile", name_or_path)
        return cls(_call_out(_lib.xs_profile_load, raw, filename=raw.decode("utf-8", "replace")))

    @classmethod
    def from_json(cls, text, filename="<profile>"):
        data = _check.text("profile JSON", text)
        fname = _check.text("filename", filename)
        return cls(_call_out(_lib.xs_profile_parse, data, len(data), fname))

    @classmethod
    def from_dict(cls, d):
        """A profile from the dict of its JSON (docs/formats.md)."""
        if not isinstance(d, dict):
            raise ArgumentTypeError("profile: expected a dict of profile JSON, got %s"
                                    % type(d).__name__)
        return cls.from_json(_check.json_text("profile", d), "<profile dict>")

    @property
    def name(self):
        return _lib.xs_profile_name(self._h).decode()

    def to_dict(self):
        """The profile's JSON as a dict (numbers exactly)."""
        return _take_json(_lib.xs_profile_to_json(self._h))

    def __repr__(self):
        return "xstage.Profile(%r)" % self.name


def profile(p: ProfileLike) -> "Profile":
    """A Profile from a Profile, a built-in name, a path or a dict."""
    if isinstance(p, Profile):
        return p
    if isinstance(p, dict):
        return Profile.from_dict(p)
    if isinstance(p, (str, bytes, os.PathLike)):
        return Profile.load(p)
    raise ArgumentTypeError("profile: expected a built-in name (%s), a path, a dict or an "
                            "xstage.Profile, got %s" % (", ".join(profiles()),
                                                        type(p).__name__))


# ---- programs ----

class Program:
    """A finished program (workers of compute, send, wait and fence ops).
    Make one with :func:`program`."""

    def __init__(self, handle):
        if not isinstance(handle, ctypes.c_void_p) or not handle:
            raise ArgumentTypeError("Program: make one with xstage.program(dict, list or "
                                    "path), not Program(%r)" % (handle,))
        self._h = handle

    def __del__(self):
        h, self._h = getattr(self, "_h", None), None
        if h:
            _lib.xs_program_free(h)

    @classmethod
    def from_json(cls, text, filename="<program>"):
        data = _check.text("program JSON", text)
        fname = _check.text("filename", filename)
        return cls(_call_out(_lib.xs_program_parse, data, len(data), fname))

    @classmethod
    def load(cls, path):
        raw = _check.path("program", path)
        return cls(_call_out(_lib.xs_program_load, raw, filename=raw.decode("utf-8", "replace")))

    def to_dict(self):
        return _take_json(_lib.xs_program_to_json(self._h))


def program(p: ProgramLike, name: str = "program") -> "Program":
    """A Program from a Program, a dict (program JSON: {"name", "workers"}),
    a list of workers ({"name", "ops": [...]}) or a path to a JSON file.
    Dicts and lists are written as program JSON and parsed by the library,
    so that its messages name the place ("workers[0].ops[1].send")."""
    if isinstance(p, Program):
        return p
    label = _check.text("name", name).decode()
    if isinstance(p, (list, tuple)) or (hasattr(p, "shape") and hasattr(p, "tolist")):
        p = {"name": label, "workers": p}
    if isinstance(p, dict):
        shown = p.get("name", label)
        shown = shown if isinstance(shown, str) and "\0" not in shown else label
        return Program.from_json(_check.json_text("program", p), "<program %s>" % shown)
    if isinstance(p, (str, bytes, os.PathLike)):
        return Program.load(p)
    raise ArgumentTypeError("program: expected a dict of program JSON, a list of workers, a "
                            "path or an xstage.Program, got %s" % type(p).__name__)


def predict(prog: ProgramLike, prof: ProfileLike,
            model: str = "burstgap") -> Union[Prediction, Dict[str, Prediction]]:
    """Evaluate a program on a profile under one model ("burstgap",
    "blocking", "serial", "ideal"): a :class:`Prediction` (makespan_s,
    issue_done_s, workers, sends, channels; serial and ideal have the
    makespan only). model="all": {model name: Prediction}, as
    `xstage predict --json` has them under "models"."""
    model = _check.choice("model", model, MODELS + ("all",))
    pg, pf = program(prog), profile(prof)
    names = list(MODELS) if model == "all" else [model]
    results = []
    try:
        for m in names:
            k = _lib.I()
            if _lib.xs_model_from_name(m.encode(), ctypes.byref(k)) != 0:
                raise InternalError("the library does not know the model %s" % m, "INTERNAL")
            results.append(_call_out(_lib.xs_evaluate, pg._h, pf._h, k.value, None))
        arr = (_lib.P * len(results))(*[r.value for r in results])
        doc = _take_json(_lib.xs_report_json(pg._h, pf._h, arr, len(results)))
    finally:
        for r in results:
            _lib.xs_result_free(r)
    models = {m: Prediction.of_model(m, d) for m, d in doc["models"].items()}
    return models if model == "all" else models[model]


def simulate(prog: ProgramLike, prof: ProfileLike, packet_B: float = 0,
             arbitration: str = "rr", max_packets: float = 0) -> Prediction:
    """Simulate a program at packet level (docs/simulate.md): a
    :class:`Prediction` of model "sim" (`xstage simulate --json`).
    packet_B 0: each channel's packet size (else 256 B); arbitration "rr"
    or "fifo"; max_packets 0: the library's bound."""
    packet = _check.number("packet_B", packet_B, 0, 1e15)
    arb = {"rr": 0, "fifo": 1}[_check.choice("arbitration", arbitration, ("rr", "fifo"))]
    most = _check.number("max_packets", max_packets, 0, 1e15)
    pg, pf = program(prog), profile(prof)
    opts = _lib.SimOptions(packet, arb, 0, None, most)
    r = _call_out(_lib.xs_simulate, pg._h, pf._h, ctypes.byref(opts))
    try:
        arr = (_lib.P * 1)(r.value)
        doc = _take_json(_lib.xs_report_json(pg._h, pf._h, arr, 1))
    finally:
        _lib.xs_result_free(r)
    return Prediction.of_model("sim", doc["models"]["sim"])


# ---- planners ----

def moe_presets() -> List[str]:
    """The MegaMoE presets' names (deepseek-v3, glm, ...)."""
    return [_lib.xs_moe_preset_name(i).decode() for i in range(_lib.xs_moe_preset_count())]


def fa_presets() -> List[str]:
    """The attention presets' names (llama3-8b, ...)."""
    return [_lib.xs_fa_preset_name(i).decode() for i in range(_lib.xs_fa_preset_count())]


def _config_text(config, presets):
    """(JSON text, filename) of a config given as a preset name, a dict or
    a path to a JSON file."""
    if isinstance(config, dict):
        return _check.json_text("config", config), b"<config>"
    if isinstance(config, str) and config in presets:
        return json.dumps({"preset": config}).encode(), b"<preset " + config.encode() + b">"
    if isinstance(config, (str, bytes, os.PathLike)):
        raw = _check.path("config", config)
        if not os.path.exists(raw) and os.sep.encode() not in raw and b"." not in raw:
            raise NotFoundError("config: %r is neither a preset (%s) nor a file"
                                % (raw.decode("utf-8", "replace"), ", ".join(presets)),
                                filename=raw.decode("utf-8", "replace"))
        return _read("config", raw)
    raise ArgumentTypeError("config: expected a preset name (%s), a dict or a path, got %s"
                            % (", ".join(presets), type(config).__name__))


EP_LIBRARIES = ("deepep-v1", "deepep-v2", "deepep-hybrid", "pplx-kernels", "uccl-ep")
EP_KERNELS = ("normal", "low-latency")


def _ep_library(c, ep_library, ep_kernel):
    """--ep-library and --ep-kernel into a config (None: as it has them)."""
    if ep_library is not None:
        c.ep_library = _check.choice("ep_library", ep_library, EP_LIBRARIES).encode()
    if ep_kernel is not None:
        c.ep_kernel = _check.choice("ep_kernel", ep_kernel, EP_KERNELS).encode()


def _moe_config(config, tokens=None, ep=None, ep_library=None, ep_kernel=None):
    if tokens is not None:
        tokens = _check.integer("tokens", tokens, 1, _TOKENS_MAX)
    if ep is not None:
        ep = _check.integer("ep", ep, 1, 100_000)
    data, fname = _config_text(config, moe_presets())
    c = _lib.MoeConfig()
    err = _lib.XsError()
    _raise(_lib.xs_moe_config_parse(data, len(data), fname, ctypes.byref(c),
                                    ctypes.byref(err)), err)
    if tokens is not None:
        c.tokens = float(tokens)
    if ep is not None:
        c.ep = float(ep)
    _ep_library(c, ep_library, ep_kernel)
    _raise(_lib.xs_moe_config_check(ctypes.byref(c), ctypes.byref(err)), err)
    return c


def _profile_on(prof, fabric):
    """The profile, with a fabric (--fabric: "ib-400", "roce-200",
    "efa-400", a fabric profile's path, dict or Profile) when one is given:
    ranks past its node_gpus are on other nodes, over the fabric's NIC."""
    if fabric is None:
        return profile(prof)
    if isinstance(prof, (str, bytes, os.PathLike)) and isinstance(fabric, (str, bytes,
                                                                          os.PathLike)):
        # both by name or path: the library's own message for a fabric it
        # does not know lists the fabrics
        gpu, fab = _check.path("prof", prof), _check.path("fabric", fabric)
        return Profile(_call_out(_lib.xs_profile_load_fabric, gpu, fab))
    pf, fb = profile(prof), profile(fabric)
    both = Profile.from_dict(pf.to_dict())  # the GPU's, not the caller's, gets the NIC
    err = _lib.XsError()
    _raise(_lib.xs_profile_add_fabric(both._h, fb._h, ctypes.byref(err)), err)
    return both


def _name_mask(what, names, noun, from_name, known):
    """Names (a list, or one str with commas) into a bit mask through the
    library's from_name (-1: unknown, named with the known ones); 0 for
    None."""
    if names is None:
        return 0
    mask = 0
    for i, s in enumerate(_check.names(what, names, noun + " names")):
        k = from_name(s.encode())
        if k < 0:
            raise InvalidInputError("%s[%d]: %r is not a %s (%s)"
                                    % (what, i, s, noun, ", ".join(known)))
        mask |= 1 << k
    return mask


def _schedule_mask(schedules):
    return _name_mask("schedules", schedules, "schedule", _lib.xs_moe_schedule_from_name,
                      MOE_SCHEDULES)


def plan_megamoe(config: ConfigLike, prof: ProfileLike, tokens: Optional[int] = None,
                 ep: Optional[int] = None, tolerance: float = 0.01,
                 schedules: Union[None, str, Sequence[str]] = None,
                 sensitivity: bool = False, fabric: Optional[ProfileLike] = None,
                 ep_library: Optional[str] = None,
                 ep_kernel: Optional[str] = None) -> MoEPlan:
    """Plan one rank of an expert-parallel MoE layer (docs/plan-megamoe.md):
    a :class:`MoEPlan` (`xstage plan megamoe --json`: every schedule's
    times, knobs, breakdown and call, and ``recommended``, the option a
    kernel should follow). config: a preset name, a dict of config keys
    (with "preset" for the rest) or a JSON file; tokens and ep (whole
    numbers) override it; schedules: the names to choose among (None: all).
    fabric (`--fabric`): the network between nodes, "ib-400", "roce-200",
    "efa-400" or a fabric profile; an ep past the profile's node needs one.
    ep_library, ep_kernel (`--ep-library`, `--ep-kernel`): the sequential
    arm's all-to-all (EP_LIBRARIES, EP_KERNELS; default deepep-v2
    normal)."""
    tol = _check.number("tolerance", tolerance, 0, 1)
    mask = _schedule_mask(schedules)
    sens = _check.flag("sensitivity", sensitivity)
    c = _moe_config(config, tokens, ep, ep_library, ep_kernel)
    pf = _profile_on(prof, fabric)
    return MoEPlan.from_dict(_call_json(_lib.xs_moe_plan_json, ctypes.byref(c), pf._h, tol,
                                        mask, 1 if sens else 0, None))


def plan_megamoe_table(config: ConfigLike, prof: ProfileLike, tokens: Optional[Numbers] = None,
                       tokens_range: Optional[Tuple[int, int]] = None,
                       ep: Optional[int] = None, tolerance: float = 0.01,
                       schedules: Union[None, str, Sequence[str]] = None,
                       fabric: Optional[ProfileLike] = None,
                       ep_library: Optional[str] = None,
                       ep_kernel: Optional[str] = None) -> MoETable:
    """A knob table over token counts: a :class:`MoETable` (`xstage plan
    megamoe --tokens-grid --json` with tokens, ascending whole numbers as a
    list or a numpy array, or `--tokens-range` with tokens_range=(min,
    max)); fabric, ep_library and ep_kernel as :func:`plan_megamoe`'s."""
    if (tokens is None) == (tokens_range is None):
        raise InvalidInputError("give one of tokens (a list) and tokens_range (min, max)")
    tol = _check.number("tolerance", tolerance, 0, 1)
    mask = _schedule_mask(schedules)
    opts = _lib.MoeTableOptions()
    if tokens is not None:
        grid_values = _check.integers("tokens", tokens, 1, 1_000_000_000, _TABLE_MAX)
        for i in range(1, len(grid_values)):
            if grid_values[i] <= grid_values[i - 1]:
                raise InvalidInputError("tokens[%d]: %d after %d: expected ascending token "
                                        "counts" % (i, grid_values[i], grid_values[i - 1]))
        grid = (_lib.D * len(grid_values))(*grid_values)
        opts.tokens, opts.ntokens = grid, len(grid_values)
    else:
        pair = _check.integers("tokens_range", tokens_range, 1, 1_000_000_000)
        if len(pair) != 2 or pair[1] < pair[0]:
            raise InvalidInputError("tokens_range: expected (min, max) with min <= max, got %r"
                                    % (tuple(pair),))
        opts.min_tokens, opts.max_tokens = float(pair[0]), float(pair[1])
    opts.tolerance = tol
    opts.schedules = mask
    c = _moe_config(config, None, ep, ep_library, ep_kernel)
    pf = _profile_on(prof, fabric)
    t = _call_out(_lib.xs_moe_plan_table, ctypes.byref(c), pf._h, ctypes.byref(opts))
    try:
        return MoETable.from_dict(_call_json(_lib.xs_moe_table_json, t, ctypes.byref(c), pf._h,
                                             tol))
    finally:
        _lib.xs_moe_table_free(t)


_KERNELS = ("fa2", "fa3", "fa4")
_LAYOUTS = ("contiguous", "zigzag", "stripe")


def _fa_config(config, seq=None, cp=None, causal=None, kernel=None, layout=None,
               backward=None):
    if seq is not None:
        seq = _check.integer("seq", seq, 1, _SEQ_MAX)
    if cp is not None:
        cp = _check.integer("cp", cp, 1, 100_000)
    if causal is not None:
        causal = _check.flag("causal", causal)
    if kernel is not None:
        kernel = _check.choice("kernel", kernel, _KERNELS)
    if layout is not None:
        layout = _check.choice("layout", layout, _LAYOUTS)
    if backward is not None:
        backward = _check.flag("backward", backward)
    data, fname = _config_text(config, fa_presets())
    c = _lib.FaConfig()
    err = _lib.XsError()
    _raise(_lib.xs_fa_config_parse(data, len(data), fname, ctypes.byref(c),
                                   ctypes.byref(err)), err)
    if seq is not None:
        c.seq = float(seq)
    if cp is not None:
        c.cp = float(cp)
    if causal is not None:
        c.causal = 1 if causal else 0
    if kernel is not None:
        c.kernel = kernel.encode()
    if layout is not None:
        c.layout = _lib.xs_fa_layout_from_name(layout.encode())
    if backward is not None:
        c.backward = 1 if backward else 0
    _raise(_lib.xs_fa_config_check(ctypes.byref(c), ctypes.byref(err)), err)
    return c


def plan_flashattn(config: ConfigLike, prof: ProfileLike, seq: Optional[int] = None,
                   cp: Optional[int] = None, causal: Optional[bool] = None,
                   kernel: Optional[str] = None, layout: Optional[str] = None,
                   backward: Optional[bool] = None, sensitivity: bool = False,
                   tolerance: float = 0.01) -> FAPlan:
    """Plan ring attention (docs/plan-flashattn.md): every way of moving KV
    under every causal layout, an :class:`FAPlan` (`xstage plan flashattn
    --json`). config: a preset
    name (llama3-8b, llama3-70b, mha), a dict or a JSON file; seq and cp
    whole numbers, causal and backward True or False. sensitivity=True adds
    ``recommended`` (the fastest ring) and ``sensitivity`` (`--sensitivity
    --json`: how it moves with each number of the profile; the choice stays
    while within tolerance of the fastest)."""
    tol = _check.number("tolerance", tolerance, 0, 1)
    sens = _check.flag("sensitivity", sensitivity)
    c = _fa_config(config, seq, cp, causal, kernel, layout, backward)
    pf = profile(prof)
    if sens:
        return FAPlan.from_dict(_call_json(_lib.xs_fa_plan_sensitivity_json, ctypes.byref(c),
                                           pf._h, tol, None))
    return FAPlan.from_dict(_call_json(_lib.xs_fa_plan_json, ctypes.byref(c), pf._h, None))


def plan_flashattn_table(config: ConfigLike, prof: ProfileLike, seq: Numbers,
                         tolerance: float = 0.01, cp: Optional[int] = None,
                         causal: Optional[bool] = None, kernel: Optional[str] = None,
                         layout: Optional[str] = None,
                         backward: Optional[bool] = None) -> FATable:
    """Per tokens per rank in seq (ascending whole numbers, a list or a
    numpy array), the ring the model predicts fastest, kept while within
    tolerance: an :class:`FATable` (`xstage plan flashattn --seq-grid
    --json`)."""
    grid_values = _check.integers("seq", seq, 1, _SEQ_MAX, _TABLE_MAX)
    tol = _check.number("tolerance", tolerance, 0, 1)
    c = _fa_config(config, None, cp, causal, kernel, layout, backward)
    pf = profile(prof)
    n = len(grid_values)
    grid = (_lib.D * n)(*grid_values)
    rows = (_lib.FaTableRow * n)()
    err = _lib.XsError()
    _raise(_lib.xs_fa_table(ctypes.byref(c), pf._h, grid, n, tol, rows, None,
                            ctypes.byref(err)), err)
    return FATable.from_dict(_call_json(_lib.xs_fa_table_json, ctypes.byref(c), pf._h, rows,
                                        n, tol))


def _grid_text(grid):
    if grid is None:
        return None, None
    if isinstance(grid, dict):
        return _check.json_text("grid", grid), b"<grid>"
    if isinstance(grid, (str, bytes, os.PathLike)):
        return _read("grid", grid)
    raise ArgumentTypeError("grid: expected None (the default grid), a dict or a path, got %s"
                            % type(grid).__name__)


def _sweep(grid, prof, grid_fn, json_fn, each=None):
    """each(config pointer, count): what the caller sets in every config
    of the grid before it is swept (None: nothing)"""
    text, fname = _grid_text(grid)
    pf = prof if isinstance(prof, Profile) else profile(prof)
    configs = ctypes.c_void_p()
    n = _lib.Z()
    err = _lib.XsError()
    _raise(grid_fn(text, len(text) if text else 0, fname, ctypes.byref(configs),
                   ctypes.byref(n), ctypes.byref(err)), err)
    try:
        if each is not None:
            each(configs, n.value)
        return Sweep.from_dict(_call_json(json_fn, pf._h, configs, n.value, None))
    finally:
        _lib.xs_free(configs)


def sweep_megamoe(prof: ProfileLike, grid: Union[None, Mapping, PathLike] = None,
                  fabric: Optional[ProfileLike] = None, ep_library: Optional[str] = None,
                  ep_kernel: Optional[str] = None) -> Sweep:
    """`xstage sweep megamoe --json`: every config of a grid planned, a
    :class:`Sweep` (records(), to_csv(), to_pandas()). grid: None (the 7
    presets x 12 token counts at EP 8), a dict {"presets", "tokens", "ep"}
    or a JSON file; fabric, ep_library and ep_kernel as
    :func:`plan_megamoe`'s (a grid of "ep": [8, ..., 256] over a fabric)."""
    if ep_library is not None:
        _check.choice("ep_library", ep_library, EP_LIBRARIES)
    if ep_kernel is not None:
        _check.choice("ep_kernel", ep_kernel, EP_KERNELS)

    def each(configs, n):
        cs = ctypes.cast(configs, ctypes.POINTER(_lib.MoeConfig))
        err = _lib.XsError()
        for i in range(n):
            _ep_library(cs[i], ep_library, ep_kernel)
            _raise(_lib.xs_moe_config_check(ctypes.byref(cs[i]), ctypes.byref(err)), err)

    return _sweep(grid, _profile_on(prof, fabric), _lib.xs_moe_sweep_grid,
                  _lib.xs_moe_sweep_json,
                  each if ep_library is not None or ep_kernel is not None else None)


def sweep_flashattn(prof: ProfileLike,
                    grid: Union[None, Mapping, PathLike] = None) -> Sweep:
    """`xstage sweep flashattn --json`, a :class:`Sweep`. grid: None (90
    configs), a dict {"presets", "seq", "cp", "causal", "kernel"} or a JSON file."""
    return _sweep(grid, prof, _lib.xs_fa_sweep_grid, _lib.xs_fa_sweep_json)


def _validate(data_path, fn, default):
    text, p = _read("data_path", data_file(default) if data_path is None else data_path)
    s = _lib.ValidateSet()
    err = _lib.XsError()
    _raise(fn(text, len(text), p, ctypes.byref(s), None, None, ctypes.byref(err)), err)
    try:
        return Validation.from_dict(_call_json(_lib.xs_validate_json, ctypes.byref(s)))
    finally:
        _lib.xs_validate_free(ctypes.byref(s))


def validate_megamoe(data_path: Optional[PathLike] = None) -> Validation:
    """`xstage validate megamoe --json`: every row of a CSV of published
    MegaMoE timings predicted, a :class:`Validation` (rows, summary;
    records(), to_csv(), to_pandas()). data_path None: the published CSV
    installed with xstage (data_file("published/megamoe.csv"))."""
    return _validate(data_path, _lib.xs_validate_megamoe, "published/megamoe.csv")


def validate_flashattn(data_path: Optional[PathLike] = None) -> Validation:
    """`xstage validate flashattn --json` (ring attention), a
    :class:`Validation`; data_path None: the published ring-attention.csv."""
    return _validate(data_path, _lib.xs_validate_flashattn, "published/ring-attention.csv")


def prediction_interval(family: str, arm: str, size: float) -> Dict[str, Any]:
    """The 80% interval xstage gives a prediction of a kernel (docs/validate.md
    "Intervals"): family "megamoe", "ep" or "flashattn"; arm a MegaMoE
    schedule's kernel (sequential, fused-split, fused-wave, fused-lag...), an
    EP "library/mode" or an attention way, or "pair" for the ratio of two
    arms of one config; size tokens per rank (sequence per rank for
    attention). low and high are multiples of the prediction; rows and
    sources are the residuals it rests on; pooled: the family's pooled model
    answered (the cell had too few rows)."""
    fam = _check.text("family", family)
    a = _check.text("arm", arm)
    n = _check.number("size", size, 0, 1e12)
    iv = _lib.Interval()
    err = _lib.XsError()
    _raise(_lib.xs_prediction_interval(fam, a, n, ctypes.byref(iv),
                                       ctypes.byref(err)), err)
    return {"low": iv.low, "high": iv.high, "center": iv.center, "level": iv.level,
            "rows": iv.rows, "sources": iv.sources, "pooled": bool(iv.pooled)}


def validate_ep(data_path: Optional[PathLike] = None, by_source: bool = False,
                models: Union[None, str, Sequence[str]] = None) -> Validation:
    """`xstage validate ep --json` (docs/ep.md): every row of a CSV of
    published EP dispatch and combine figures predicted in its own metric,
    a :class:`Validation` whose summary is per library and mode, library,
    phase and source. by_source=True (`--by-source`) refits the fitted
    constants without each source and predicts its rows with them (about
    20 s); models (`--models`): "all" or a list of blocking, serial, ideal
    for their errors beside burstgap's. data_path None: the published
    ep.csv."""
    loso = _check.flag("by_source", by_source)
    mask = 1
    if models is not None:
        names = list(MODELS[1:]) if models == "all" else _check.names("models", models,
                                                                        "model names")
        for i, m in enumerate(names):
            if m not in MODELS:
                raise InvalidInputError("models[%d]: %r is not a model (%s, or all)"
                                        % (i, m, ", ".join(MODELS)))
            mask |= 1 << MODELS.index(m)
    text, p = _read("data_path", data_file("published/ep.csv") if data_path is None
                    else data_path)
    s = _lib.ValidateSet()
    err = _lib.XsError()
    _raise(_lib.xs_validate_ep(text, len(text), p, ctypes.byref(s), None, None,
                               ctypes.byref(err)), err)
    try:
        values = None
        if loso:
            nsrc = _lib.xs_validate_distinct(ctypes.byref(s), 1, None, 0)
            values = (_lib.D * (max(nsrc, 1) * 5))()  # XS_EP_CONSTANTS a source
            _raise(_lib.xs_validate_ep_by_source(ctypes.byref(s), values, ctypes.byref(err)),
                   err)
        # each row's 80% interval, from the other sources' residuals
        _raise(_lib.xs_validate_intervals(ctypes.byref(s), ctypes.byref(err)), err)
        return Validation.from_dict(_call_json(_lib.xs_validate_ep_json, ctypes.byref(s),
                                               mask, values))
    finally:
        _lib.xs_validate_free(ctypes.byref(s))


_MOE_TERM_NAMES = ("gemm", "tile", "l2", "hbm", "link", "link-issue", "capacity", "latency",
                   "launch", "barrier", "setup", "host-sync", "a2a")


def fit_megamoe(data_path: PathLike, base: ProfileLike,
                terms: Union[None, str, Sequence[str]] = None, source: Optional[str] = None,
                bootstrap: int = 0, seed: int = 0) -> MoEFit:
    """`xstage fit megamoe` (docs/tune.md): the kernel model's terms fitted
    to the rows of a CSV of kernel timings (the validate format) whose gpu
    is base's name, a :class:`MoEFit` (each row before and after, each
    term's scale with its 68% interval, or why it was not fitted) whose
    ``tuned`` is base with the fitted numbers (an :class:`xstage.Profile`;
    ``tuned.to_dict()`` is the file `-o` writes). terms: names to fit
    (None: every term the rows determine); source: only that source's rows;
    bootstrap: resamples (0: 200); seed: of the resampling (0: a fixed
    one)."""
    mask = _name_mask("terms", terms, "term", _lib.xs_moe_term_from_name, _MOE_TERM_NAMES)
    src = None if source is None else _check.text("source", source)
    opts = _lib.MoeFitOptions(mask, src, 0, _check.integer("bootstrap", bootstrap, 0, 100_000),
                              _check.integer("seed", seed, 0, 2 ** 53))
    text, p = _read("data_path", data_path)
    pf = profile(base)
    r = _lib.MoeFitResult()
    tuned = ctypes.c_void_p()
    err = _lib.XsError()
    _raise(_lib.xs_moe_fit(text, len(text), p, pf._h, ctypes.byref(opts), ctypes.byref(r),
                           ctypes.byref(tuned), ctypes.byref(err)), err,
           p.decode("utf-8", "replace"))
    try:
        keys = ctypes.create_string_buffer(512)
        doc = {
            "profile": pf.name, "data": p.decode("utf-8", "replace"), "rows_fitted": r.nrows,
            "skipped": r.skipped,
            "rows": [{"line": r.rows[i].line, "measured_us": r.rows[i].measured_us,
                      "before_us": r.rows[i].before_us, "after_us": r.rows[i].after_us}
                     for i in range(r.nrows)],
            "median_before": r.median_before, "median_after": r.median_after,
            "max_before": r.max_before, "max_after": r.max_after,
            "iterations": r.iterations, "evaluations": r.evaluations,
            "terms": [{"term": _lib.xs_moe_term_name(t.term).decode(), "fitted": bool(t.fitted),
                       "keys": _lib.xs_moe_term_keys(pf._h, t.term, keys, 512).decode(),
                       "base": t.base, "value": t.value, "scale": t.scale, "lo": t.lo,
                       "hi": t.hi, "sensitivity": t.sensitivity,
                       "why": t.why.decode("utf-8", "replace") or None}
                      for t in r.terms],
        }
    finally:
        _lib.xs_moe_fit_free(ctypes.byref(r))
    fit = MoEFit.from_dict(doc)
    object.__setattr__(fit, "tuned", Profile(tuned))
    return fit


from .tuner import Tuner  # noqa: E402  (docs/tune.md)
