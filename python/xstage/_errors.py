"""The exceptions of the xstage package.

Every failure is an :class:`Error`, and also the built-in exception a
Python user expects for it, so that ``except FileNotFoundError`` and
``except ValueError`` work as they do elsewhere:

- :class:`InvalidInputError` (a ValueError): a value that makes no sense
  (status INVALID, CYCLE), or an argument out of its range;
- :class:`ParseError` (an InvalidInputError): malformed JSON or CSV;
- :class:`ArgumentTypeError` (a TypeError): an argument of the wrong type;
- :class:`NotFoundError` (a FileNotFoundError): a missing file, or a
  profile name that is neither a file nor built in (NOTFOUND);
- :class:`InputOutputError` (an OSError): a read or write that failed (IO);
- :class:`OutOfMemoryError` (a MemoryError): NOMEM;
- :class:`NotAvailableError` (a RuntimeError): NOTBUILT, NODEV;
- :class:`DeadlineError` (a TimeoutError): TIMEOUT;
- :class:`InternalError` (a RuntimeError): INTERNAL.
"""
import errno as _errno

# xs_status, in the numbering of xstage.h's XS_STATUS_MAP (never changes)
STATUS = ["OK", "INVALID", "PARSE", "NOMEM", "IO", "CYCLE", "NOTFOUND",
          "NOTBUILT", "NODEV", "TIMEOUT", "INTERNAL"]


class Error(Exception):
    """A failure reported by xstage (the library, or this package's checks
    of an argument before it reaches the library).

    ``message`` is xstage's text ("prog.json:4:17: workers[0].ops[2].send:
    expected ..."), ``status`` the status name ("INVALID", "PARSE", ...),
    ``code`` its number in xstage.h.
    """

    def __init__(self, message, status="INVALID"):
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = STATUS.index(status) if status in STATUS else -1

    def __str__(self):
        return self.message

    def __repr__(self):
        return "%s(%r, status=%r)" % (type(self).__name__, self.message, self.status)

    def __reduce__(self):  # pickles (multiprocessing) as itself
        return (type(self), (self.message, self.status))


class InvalidInputError(Error, ValueError):
    """A value that makes no sense: a negative size, a cycle of waits, a
    token count out of range."""


class ParseError(InvalidInputError):
    """Malformed JSON or CSV, with the file, line and column."""


class ArgumentTypeError(Error, TypeError):
    """An argument of a type the function does not take (None where a
    profile is expected, a float where a count is)."""


class NotFoundError(Error, FileNotFoundError):
    """A file that is not there, or a profile name that is neither a file
    nor a built-in profile."""

    def __init__(self, message, status="NOTFOUND", filename=None):
        Error.__init__(self, message, status)
        self.errno = _errno.ENOENT
        self.strerror = message
        self.filename = filename

    def __reduce__(self):
        return (type(self), (self.message, self.status, self.filename))


class InputOutputError(Error, OSError):
    """A read or a write that failed (IO)."""


class OutOfMemoryError(Error, MemoryError):
    """The library ran out of memory (NOMEM)."""


class NotAvailableError(Error, RuntimeError):
    """Not built into this libxstage, or no device (NOTBUILT, NODEV)."""


class DeadlineError(Error, TimeoutError):
    """A measurement that ran past its timeout (TIMEOUT)."""


class InternalError(Error, RuntimeError):
    """A bug in xstage (INTERNAL): please report it with the input."""


_BY_STATUS = {
    "INVALID": InvalidInputError, "CYCLE": InvalidInputError, "PARSE": ParseError,
    "NOTFOUND": NotFoundError, "IO": InputOutputError, "NOMEM": OutOfMemoryError,
    "NOTBUILT": NotAvailableError, "NODEV": NotAvailableError,
    "TIMEOUT": DeadlineError, "INTERNAL": InternalError,
}


def from_status(code, message, filename=None):
    """The exception for a status the library returned (its number)."""
    status = STATUS[code] if 0 <= code < len(STATUS) else str(code)
    cls = _BY_STATUS.get(status, Error)
    if cls is NotFoundError:
        return NotFoundError(message, status, filename)
    return cls(message, status)


def raise_status(status, err, filename=None):
    """Raise the exception for a library call's status (0: nothing), with
    the message its xs_error err holds (filename: where the library's
    NOTFOUND names a file)."""
    if status:
        raise from_status(status, err.message.decode("utf-8", "replace"), filename)


def from_os_error(e, path):
    """The exception for an OSError of reading path (a config, a grid, a
    CSV this package reads itself): the same kinds as the library's."""
    message = "%s: cannot open: %s" % (path, e.strerror or e)
    if isinstance(e, (FileNotFoundError, NotADirectoryError)):
        return NotFoundError(message, filename=path)
    if isinstance(e, IsADirectoryError):
        return InvalidInputError("%s: is a folder, not a file" % path)
    return InputOutputError(message, "IO")
