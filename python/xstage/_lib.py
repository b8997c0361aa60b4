"""Finding and loading libxstage, and the C functions this package calls.

Where the library is looked for, in order:

1. ``XSTAGE_LIBRARY`` (a path): when set, that library or an ImportError,
   never another;
2. inside the package (``xstage/libxstage.so.X.Y``: ``pip install``);
3. ``ctypes.util.find_library("xstage")`` (the loader's folders);
4. ``lib``, ``lib64`` and ``lib/<multiarch>`` above the package's install
   prefix (``cmake --install``), as ``libxstage.so`` or the versioned name
   a run-time install has;
5. the build tree of a source checkout (``<repo>/build/libxstage.so``).

A library from another version is refused with both versions named (an
ImportError, never an AttributeError on first use): its major and minor
version must be this package's, every function the package calls must be
there, and the structs the package mirrors must have the library's sizes.
"""
import ctypes
import ctypes.util
import glob
import os
import sys

from ._version import __version__

PKG_DIR = os.path.dirname(os.path.abspath(__file__))
WANT = tuple(int(x) for x in __version__.split(".")[:2])


def _multiarch():
    arch = getattr(sys.implementation, "_multiarch", None)
    return [arch] if arch else []


def _versioned(folder):
    """libxstage.so, then the versioned names (newest first) in folder."""
    return [os.path.join(folder, "libxstage.so")] + sorted(
        glob.glob(os.path.join(folder, "libxstage.so.*")), reverse=True)


def candidates():
    """Where to look, in order: (what, path or name); XSTAGE_LIBRARY apart."""
    out = [("inside the package", p) for p in _versioned(PKG_DIR)[1:]]
    out.append(("ctypes.util.find_library('xstage')", ctypes.util.find_library("xstage")))
    dirs, prefix = [], PKG_DIR
    for _ in range(6):
        prefix = os.path.dirname(prefix)
        for sub in ["lib", "lib64"] + [os.path.join("lib", a) for a in _multiarch()]:
            d = os.path.join(prefix, sub)
            if d not in dirs:
                dirs.append(d)
    for d in dirs:
        out += [("installed prefix", p) for p in _versioned(d)]
    out.append(("build tree", os.path.normpath(
        os.path.join(PKG_DIR, "..", "..", "build", "libxstage.so"))))
    return out


def library_version(lib):
    """(major, minor, patch) and the text of a loaded library, or None."""
    try:
        f = lib.xs_version
    except AttributeError:
        return None
    f.restype = ctypes.c_char_p
    f.argtypes = []
    text = (f() or b"").decode("ascii", "replace")
    try:
        return tuple(int(x) for x in text.split(".")[:3]), text
    except ValueError:
        return None


def _why_unfit(lib):
    """None when lib is a libxstage of this package's version, else why not."""
    v = library_version(lib)
    if v is None:
        return "not a libxstage (no xs_version)"
    if v[0][:2] != WANT:
        return ("libxstage %s; this xstage package (%s) needs libxstage %d.%d.x"
                % (v[1], __version__, WANT[0], WANT[1]))
    return None


def load():
    """(the loaded library, its path), or ImportError saying where it looked
    and what it found there."""
    asked = os.environ.get("XSTAGE_LIBRARY")
    if asked:  # asked for: that library or none
        try:
            lib = ctypes.CDLL(asked)
        except OSError as e:
            raise ImportError("xstage: XSTAGE_LIBRARY=%s cannot be loaded: %s" % (asked, e))
        why = _why_unfit(lib)
        if why:
            raise ImportError("xstage: XSTAGE_LIBRARY=%s is %s" % (asked, why))
        return lib, asked
    tried, prefix_dirs = [], []
    for what, path in candidates():
        if not path:
            tried.append("%s: nothing found" % what)
            continue
        if os.sep in path and not os.path.exists(path):
            if what == "installed prefix":
                if os.path.dirname(path) not in prefix_dirs:
                    prefix_dirs.append(os.path.dirname(path))
            elif what != "inside the package":
                tried.append("%s: %s (no such file)" % (what, path))
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s: %s (%s)" % (what, path, e))
            continue
        why = _why_unfit(lib)
        if why:
            tried.append("%s: %s (%s)" % (what, path, why))
            continue
        return lib, path
    raise ImportError(
        "xstage: no libxstage %d.%d found. Looked at:\n  XSTAGE_LIBRARY: not set\n  "
        % WANT + "\n  ".join(tried[:1] + ["installed prefix: " + ", ".join(prefix_dirs)]
                             + tried[1:])
        + "\nInstall the package (pip install --no-build-isolation . in a clone), build "
        "the library (cmake -S . -B build && cmake --build build), install it "
        "(cmake --install build), or set XSTAGE_LIBRARY to its path.")


lib, lib_path = load()
_lib_version = library_version(lib)[1]


def fn(name, restype, *argtypes):
    """A function of the library with its C signature; a library without it
    (another version) is an ImportError naming both versions."""
    try:
        f = getattr(lib, name)
    except AttributeError:
        raise ImportError(
            "xstage: %s (libxstage %s) has no %s, which this xstage package (%s) calls: "
            "the library and the package come from different versions; install them "
            "together (pip install, or cmake --install of one tree)"
            % (lib_path, _lib_version, name, __version__)) from None
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


# ---- the structs this package mirrors (xstage.h) ----

class XsError(ctypes.Structure):
    _fields_ = [("status", ctypes.c_int), ("message", ctypes.c_char * 1024)]


class Interval(ctypes.Structure):
    """xs_interval of xstage.h."""
    _fields_ = [("low", ctypes.c_double), ("high", ctypes.c_double),
                ("center", ctypes.c_double), ("level", ctypes.c_double),
                ("rows", ctypes.c_size_t), ("sources", ctypes.c_size_t),
                ("pooled", ctypes.c_int)]


class MoeConfig(ctypes.Structure):
    """xs_moe_config of xstage.h, field for field."""
    _fields_ = [("name", ctypes.c_char * 64)] + [
        (f, ctypes.c_double) for f in (
            "tokens", "hidden", "intermediate", "experts", "topk", "ep",
            "act_bytes", "combine_bytes", "weight_bytes", "shared_experts",
            "block_m", "block_n", "sms", "imbalance", "capacity", "sm_groups")
    ] + [("dtype", ctypes.c_char * 16), ("ep_library", ctypes.c_char * 24),
         ("ep_kernel", ctypes.c_char * 16), ("timing", ctypes.c_char * 16),
         ("cold_l2", ctypes.c_double)]


class FaConfig(ctypes.Structure):
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
        ("timing", ctypes.c_int),
    ]


class MoeTableOptions(ctypes.Structure):
    _fields_ = [("tokens", ctypes.POINTER(ctypes.c_double)), ("ntokens", ctypes.c_size_t),
                ("min_tokens", ctypes.c_double), ("max_tokens", ctypes.c_double),
                ("tolerance", ctypes.c_double), ("schedules", ctypes.c_uint)]


class SimOptions(ctypes.Structure):
    _fields_ = [("packet_B", ctypes.c_double), ("arbitration", ctypes.c_int),
                ("summary_only", ctypes.c_int), ("timeline", ctypes.c_void_p),
                ("max_packets", ctypes.c_double)]


class ValidateSet(ctypes.Structure):
    # xs_validate_set whole: the library writes every field
    _fields_ = [("rows", ctypes.c_void_p), ("nrows", ctypes.c_size_t),
                ("refitted", ctypes.c_int), ("refit", ctypes.c_double * 5),
                ("refit_left_out", ctypes.c_size_t), ("refit_rows", ctypes.c_size_t),
                ("refit_without", ctypes.c_char * 64)]


_D = ctypes.c_double


class MoeFitOptions(ctypes.Structure):  # xs_moe_fit_options
    _fields_ = [("terms", ctypes.c_uint), ("source", ctypes.c_char_p),
                ("max_iterations", ctypes.c_uint), ("bootstrap", ctypes.c_uint),
                ("seed", ctypes.c_uint64)]


class MoeFitTerm(ctypes.Structure):  # xs_moe_fit_term
    _fields_ = [("term", ctypes.c_int), ("fitted", ctypes.c_int), ("base", _D), ("value", _D),
                ("scale", _D), ("lo", _D), ("hi", _D), ("sensitivity", _D),
                ("why", ctypes.c_char * 192)]


class MoeFitRow(ctypes.Structure):  # xs_moe_fit_row
    _fields_ = [("line", ctypes.c_size_t), ("measured_us", _D), ("before_us", _D),
                ("after_us", _D)]


MOE_TERMS = 13  # XS_MOE_TERMS


class MoeFitResult(ctypes.Structure):  # xs_moe_fit_result
    _fields_ = [("nrows", ctypes.c_size_t), ("skipped", ctypes.c_size_t),
                ("rows", ctypes.POINTER(MoeFitRow)), ("median_before", _D),
                ("median_after", _D), ("max_before", _D), ("max_after", _D),
                ("iterations", ctypes.c_uint), ("evaluations", ctypes.c_uint),
                ("nfitted", ctypes.c_size_t), ("terms", MoeFitTerm * MOE_TERMS)]


class FaRing(ctypes.Structure):
    _fields_ = [("path", ctypes.c_int), ("layout", ctypes.c_int), ("time_s", _D),
                ("compute_s", _D), ("merge_s", _D), ("fixed_s", _D),
                ("interference_s", _D), ("exposed_s", _D), ("imbalance_s", _D),
                ("stall_s", _D), ("free_s", _D), ("forward_sms", ctypes.c_uint),
                ("bound", ctypes.c_char_p), ("host_s", _D)]


class FaTableRow(ctypes.Structure):
    _fields_ = [("seq", _D), ("chosen", FaRing), ("fastest", FaRing), ("near", ctypes.c_size_t)]


P = ctypes.c_void_p
S = ctypes.c_char_p
Z = ctypes.c_size_t
D = ctypes.c_double
I = ctypes.c_int  # noqa: E741
E = ctypes.POINTER(XsError)
OUT = ctypes.POINTER(ctypes.c_void_p)
U = ctypes.c_uint

xs_version = fn("xs_version", S)
xs_free = fn("xs_free", None, P)
xs_format_time = fn("xs_format_time", S, D, ctypes.c_char_p, Z)
xs_struct_size = fn("xs_struct_size", Z, S)
xs_profile_load = fn("xs_profile_load", I, S, OUT, E)
xs_profile_parse = fn("xs_profile_parse", I, S, Z, S, OUT, E)
xs_profile_free = fn("xs_profile_free", None, P)
xs_profile_name = fn("xs_profile_name", S, P)
xs_profile_to_json = fn("xs_profile_to_json", P, P)
xs_builtin_profile_count = fn("xs_builtin_profile_count", Z)
xs_builtin_profile_name = fn("xs_builtin_profile_name", S, Z)
xs_program_parse = fn("xs_program_parse", I, S, Z, S, OUT, E)
xs_program_load = fn("xs_program_load", I, S, OUT, E)
xs_program_free = fn("xs_program_free", None, P)
xs_program_to_json = fn("xs_program_to_json", P, P)
xs_model_from_name = fn("xs_model_from_name", I, S, ctypes.POINTER(I))
xs_evaluate = fn("xs_evaluate", I, P, P, I, P, OUT, E)
xs_simulate = fn("xs_simulate", I, P, P, ctypes.POINTER(SimOptions), OUT, E)
xs_result_free = fn("xs_result_free", None, P)
xs_report_json = fn("xs_report_json", P, P, P, ctypes.POINTER(P), Z)
xs_moe_preset_count = fn("xs_moe_preset_count", Z)
xs_moe_preset_name = fn("xs_moe_preset_name", S, Z)
xs_moe_config_parse = fn("xs_moe_config_parse", I, S, Z, S, ctypes.POINTER(MoeConfig), E)
xs_moe_config_check = fn("xs_moe_config_check", I, ctypes.POINTER(MoeConfig), E)
xs_moe_schedule_from_name = fn("xs_moe_schedule_from_name", I, S)
xs_moe_plan_json = fn("xs_moe_plan_json", I, ctypes.POINTER(MoeConfig), P, D, U, I, P,
                      OUT, E)
xs_moe_plan_table = fn("xs_moe_plan_table", I, ctypes.POINTER(MoeConfig), P,
                       ctypes.POINTER(MoeTableOptions), OUT, E)
xs_moe_table_free = fn("xs_moe_table_free", None, P)
xs_moe_table_json = fn("xs_moe_table_json", I, P, ctypes.POINTER(MoeConfig), P, D, OUT, E)
xs_fa_preset_count = fn("xs_fa_preset_count", Z)
xs_fa_preset_name = fn("xs_fa_preset_name", S, Z)
xs_fa_config_parse = fn("xs_fa_config_parse", I, S, Z, S, ctypes.POINTER(FaConfig), E)
xs_fa_config_check = fn("xs_fa_config_check", I, ctypes.POINTER(FaConfig), E)
xs_fa_layout_from_name = fn("xs_fa_layout_from_name", I, S)
xs_fa_plan_json = fn("xs_fa_plan_json", I, ctypes.POINTER(FaConfig), P, P, OUT, E)
xs_fa_plan_sensitivity_json = fn("xs_fa_plan_sensitivity_json", I, ctypes.POINTER(FaConfig), P,
                                 D, P, OUT, E)
xs_fa_table = fn("xs_fa_table", I, ctypes.POINTER(FaConfig), P, ctypes.POINTER(D), Z, D, P,
                 ctypes.POINTER(Z), E)
xs_fa_table_json = fn("xs_fa_table_json", I, ctypes.POINTER(FaConfig), P, P, Z, D, OUT, E)
xs_moe_sweep_grid = fn("xs_moe_sweep_grid", I, S, Z, S, OUT, ctypes.POINTER(Z), E)
xs_fa_sweep_grid = fn("xs_fa_sweep_grid", I, S, Z, S, OUT, ctypes.POINTER(Z), E)
xs_moe_sweep_json = fn("xs_moe_sweep_json", I, P, P, Z, P, OUT, E)
xs_fa_sweep_json = fn("xs_fa_sweep_json", I, P, P, Z, P, OUT, E)
xs_validate_megamoe = fn("xs_validate_megamoe", I, S, Z, S, ctypes.POINTER(ValidateSet),
                         P, P, E)
xs_validate_flashattn = fn("xs_validate_flashattn", I, S, Z, S,
                           ctypes.POINTER(ValidateSet), P, P, E)
xs_validate_free = fn("xs_validate_free", None, ctypes.POINTER(ValidateSet))
xs_validate_json = fn("xs_validate_json", I, ctypes.POINTER(ValidateSet), OUT, E)
xs_prediction_interval = fn("xs_prediction_interval", I, S, S, D, ctypes.POINTER(Interval), E)
xs_moe_interval = fn("xs_moe_interval", I, I, D, ctypes.POINTER(Interval), E)
xs_validate_ep = fn("xs_validate_ep", I, S, Z, S, ctypes.POINTER(ValidateSet), P, P, E)
xs_validate_distinct = fn("xs_validate_distinct", Z, ctypes.POINTER(ValidateSet), I, P, Z)
xs_validate_ep_by_source = fn("xs_validate_ep_by_source", I, ctypes.POINTER(ValidateSet),
                              ctypes.POINTER(D), E)
xs_validate_intervals = fn("xs_validate_intervals", I, ctypes.POINTER(ValidateSet), E)
xs_validate_ep_json = fn("xs_validate_ep_json", I, ctypes.POINTER(ValidateSet), U,
                         ctypes.POINTER(D), OUT, E)
xs_profile_load_fabric = fn("xs_profile_load_fabric", I, S, S, OUT, E)
xs_profile_add_fabric = fn("xs_profile_add_fabric", I, P, P, E)
xs_moe_term_from_name = fn("xs_moe_term_from_name", I, S)
xs_moe_term_name = fn("xs_moe_term_name", S, I)
xs_moe_term_keys = fn("xs_moe_term_keys", S, P, I, ctypes.c_char_p, Z)
xs_moe_fit = fn("xs_moe_fit", I, S, Z, S, P, ctypes.POINTER(MoeFitOptions),
                ctypes.POINTER(MoeFitResult), OUT, E)
xs_moe_fit_free = fn("xs_moe_fit_free", None, ctypes.POINTER(MoeFitResult))


def check_layouts():
    """The structs mirrored here against the library's own sizes: a library
    built from another xstage.h would otherwise be read wrongly."""
    for cname, mirror in (("xs_error", XsError), ("xs_moe_config", MoeConfig),
                          ("xs_fa_config", FaConfig),
                          ("xs_moe_table_options", MoeTableOptions),
                          ("xs_sim_options", SimOptions), ("xs_fa_ring", FaRing),
                          ("xs_fa_table_row", FaTableRow), ("xs_interval", Interval),
                          ("xs_validate_set", ValidateSet),
                          ("xs_moe_fit_options", MoeFitOptions),
                          ("xs_moe_fit_result", MoeFitResult)):
        want = xs_struct_size(cname.encode())
        if want != ctypes.sizeof(mirror):
            raise ImportError(
                "xstage: %s is %d bytes in %s (libxstage %s), %d in this xstage package "
                "(%s): the library and the package come from different builds"
                % (cname, want, lib_path, _lib_version, ctypes.sizeof(mirror), __version__))


check_layouts()
