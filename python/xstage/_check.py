"""The argument layer: every argument of the public functions is checked
here, by type and then by value, before anything reaches the library.

A wrong type is an :class:`ArgumentTypeError` (a TypeError), a wrong value
an :class:`InvalidInputError` (a ValueError); both name the argument, and
for an element of a list or a key of a dict, where it is
(``tokens[3]``, ``program.workers[0].ops[1].send``). Numbers may be
Python's or numpy's (numpy is optional: nothing here imports it); a list of
numbers may be a list, a tuple, a range or a one-dimensional numpy array.
"""
import json
import math
import numbers
import os

from ._errors import ArgumentTypeError, InvalidInputError


def _type_name(value):
    t = type(value)
    return t.__name__ if t.__module__ == "builtins" else "%s.%s" % (t.__module__, t.__name__)


def _is_bool(value):
    # numpy.bool_ is not a numbers.Integral, but say so plainly
    return isinstance(value, bool) or type(value).__name__ in ("bool_", "bool8")


def text(name, value, what="a str"):
    """A string argument as UTF-8 bytes: str (or bytes), without NUL."""
    if isinstance(value, bytes):
        raw = value
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise InvalidInputError("%s: not UTF-8 at byte %d" % (name, e.start)) from None
    elif isinstance(value, str):
        try:
            raw = value.encode("utf-8")
        except UnicodeEncodeError as e:
            raise InvalidInputError("%s: character %d cannot be written as UTF-8"
                                    % (name, e.start)) from None
    else:
        raise ArgumentTypeError("%s: expected %s, got %s" % (name, what, _type_name(value)))
    at = raw.find(b"\0")
    if at >= 0:
        raise InvalidInputError("%s: contains a NUL character at byte %d" % (name, at))
    return raw


def path(name, value):
    """A path argument (str, bytes or os.PathLike) as bytes."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    return text(name, value, "a path (str or os.PathLike)")


def integer(name, value, lo=None, hi=None):
    """A whole number: int or numpy integer, or a float holding a whole
    number (4096.0); not a bool, not a str."""
    if _is_bool(value) or not isinstance(value, numbers.Real):
        raise ArgumentTypeError("%s: expected an int, got %s" % (name, _type_name(value)))
    if not isinstance(value, numbers.Integral):
        v = float(value)
        if not math.isfinite(v) or v != math.floor(v):
            raise InvalidInputError("%s: expected a whole number, got %r" % (name, value))
        value = v
    v = int(value)
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise InvalidInputError("%s: expected a whole number from %s to %s, got %d"
                                % (name, lo, hi, v))
    return v


def number(name, value, lo=None, hi=None):
    """A finite real number (int, float, numpy), within [lo, hi] if given."""
    if _is_bool(value) or not isinstance(value, numbers.Real):
        raise ArgumentTypeError("%s: expected a number, got %s" % (name, _type_name(value)))
    v = float(value)
    if not math.isfinite(v):
        raise InvalidInputError("%s: expected a finite number, got %r" % (name, value))
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise InvalidInputError("%s: expected a number from %g to %g, got %r"
                                % (name, lo, hi, value))
    return v


def flag(name, value):
    """A yes/no argument: True or False (or numpy's), nothing else."""
    if not _is_bool(value):
        raise ArgumentTypeError("%s: expected True or False, got %s"
                                % (name, _type_name(value)))
    return bool(value)


def sequence(name, value, what):
    """The elements of a list-like argument: list, tuple, range or a
    one-dimensional array; not a str, a dict or a set (no order)."""
    shape = getattr(value, "shape", None)
    if shape is not None and hasattr(value, "tolist"):  # numpy, without importing it
        if len(shape) != 1:
            raise InvalidInputError("%s: expected a one-dimensional array of %s, got shape %s"
                                    % (name, what, tuple(shape)))
        return value.tolist()
    if isinstance(value, (list, tuple, range)):
        return list(value)
    raise ArgumentTypeError("%s: expected a list of %s, got %s" % (name, what, _type_name(value)))


def integers(name, value, lo, hi, at_most=None):
    """A list of whole numbers (tokens per rank, sequence lengths)."""
    items = sequence(name, value, "whole numbers")
    if not items:
        raise InvalidInputError("%s: expected at least one value, got none" % name)
    if at_most is not None and len(items) > at_most:
        raise InvalidInputError("%s: at most %d values, got %d" % (name, at_most, len(items)))
    return [integer("%s[%d]" % (name, i), v, lo, hi) for i, v in enumerate(items)]


def names(name, value, what):
    """A list of names (schedules): a list of str, or one str with commas."""
    if isinstance(value, str):
        value = value.split(",")
    items = sequence(name, value, what)
    return [text("%s[%d]" % (name, i), v, "a str (%s)" % what).decode()
            for i, v in enumerate(items)]


def choice(name, value, allowed):
    """A str that must be one of allowed."""
    v = text(name, value, "a str (%s)" % ", ".join(allowed)).decode()
    if v not in allowed:
        raise InvalidInputError("%s: expected %s, got %r" % (name, ", ".join(allowed), v))
    return v


def _plain(name, value, depth=0):
    """value as plain JSON types (numpy scalars and arrays to Python's),
    refusing what JSON cannot hold, with the place named."""
    if depth > 64:
        raise InvalidInputError("%s: nested more than 64 deep" % name)
    if isinstance(value, str):
        if "\0" in value:
            raise InvalidInputError("%s: contains a NUL character at %d"
                                    % (name, value.index("\0")))
        return value
    if value is None or isinstance(value, bool):
        return value
    if _is_bool(value):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        v = float(value)
        if not math.isfinite(v):
            raise InvalidInputError("%s: %r is not a JSON number" % (name, value))
        return v
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise ArgumentTypeError("%s: a key must be a str, got %s %r"
                                        % (name, _type_name(k), k))
            if "\0" in k:
                raise InvalidInputError("%s: the key %r contains a NUL character" % (name, k))
            out[k] = _plain("%s.%s" % (name, k), v, depth + 1)
        return out
    if isinstance(value, (list, tuple)) or (getattr(value, "shape", None) is not None
                                            and hasattr(value, "tolist")):
        items = value.tolist() if hasattr(value, "tolist") else value
        if not isinstance(items, list):
            items = [items]
        return [_plain("%s[%d]" % (name, i), v, depth + 1) for i, v in enumerate(items)]
    raise ArgumentTypeError("%s: %s is not a JSON value (str, number, bool, None, list, dict)"
                            % (name, _type_name(value)))


def json_text(name, value):
    """A dict (or list) argument as JSON text for the library, which
    parses it and names the place of anything wrong in it."""
    return json.dumps(_plain(name, value), indent=1, allow_nan=False).encode("utf-8")
