"""Exceptions raised by corelat.

``InputError`` is a ``ValueError`` for arguments that make no sense (the CLI answers them with exit
status 2); ``MeasurementError`` and ``MeasurementTimeout`` come from a measurement that started and
could not finish (exit status 1).
"""

import os


class CorelatError(Exception):
    """Base class of every exception corelat raises on purpose.

    Examples
    --------
    >>> import corelat
    >>> try:
    ...     corelat.load("no-such-file.npz")
    ... except corelat.CorelatError as e:
    ...     print(type(e).__name__)
    InputFileNotFoundError
    """


class InputError(CorelatError, ValueError):
    """A bad argument: unknown or disallowed CPU, nonsense size, unknown kernel, corrupt file.

    Also a :class:`ValueError`; the CLI answers it with exit status 2.

    Examples
    --------
    >>> import corelat
    >>> try:
    ...     corelat.measure(kernel="no-such-kernel")
    ... except corelat.InputError as e:
    ...     print(isinstance(e, ValueError))
    True
    """


class InputTypeError(InputError, TypeError):
    """An argument of the wrong type (a CPU id that is not an integer, a topology that is not one).

    Also a :class:`TypeError` and an :class:`InputError`.

    Examples
    --------
    >>> import corelat
    >>> try:
    ...     corelat.topology().order(["0"])
    ... except corelat.InputTypeError as e:
    ...     print(isinstance(e, TypeError))
    True
    """


class InputKeyError(InputError, KeyError):
    # A name that is not there (a fleet's node): also a KeyError, for code that looks names up.
    def __str__(self):
        return str(self.args[0]) if self.args else ""  # KeyError would quote the message


class InputFileNotFoundError(InputError, FileNotFoundError):
    """A file or folder that an argument names does not exist.

    Also a :class:`FileNotFoundError` and an :class:`InputError`.

    Examples
    --------
    >>> import corelat
    >>> try:
    ...     corelat.topology(root="/no/such/dump")
    ... except FileNotFoundError as e:
    ...     print(type(e).__name__)
    InputFileNotFoundError
    """


class MissingDependencyError(CorelatError, ImportError):
    """An optional package that the call needs is not installed (matplotlib, mpi4py, ...).

    Also an :class:`ImportError`; the message gives the command that installs it.

    Examples
    --------
    >>> import corelat
    >>> issubclass(corelat.MissingDependencyError, ImportError)
    True
    >>> try:
    ...     fig = corelat.plot.heatmap(corelat.load(corelat.example_files()[0]))  # doctest: +SKIP
    ... except corelat.MissingDependencyError as e:  # where matplotlib is not installed
    ...     print(e)
    """


class SaveError(CorelatError, OSError):
    """A result or file could not be written (a missing or read-only folder, a full disk, a name
    that is a folder or a device); what was there before is left as it was.

    Also an :class:`OSError`, with the ``errno`` of the failure and the path in the message.

    Examples
    --------
    >>> import corelat
    >>> r = corelat.load(corelat.example_files()[0])
    >>> try:
    ...     r.save("/no/such/folder/result.npz")
    ... except OSError as e:
    ...     print(type(e).__name__, e.errno)
    SaveError 2
    """


class MeasurementError(CorelatError, RuntimeError):
    """A measurement started but failed (a thread could not be created or pinned, ...).

    Also a :class:`RuntimeError`; the CLI answers it with exit status 1.

    Examples
    --------
    >>> import corelat
    >>> try:
    ...     r = corelat.measure()  # doctest: +SKIP
    ... except corelat.MeasurementError as e:
    ...     print("measurement failed:", e)
    """


class MeasurementTimeout(MeasurementError, TimeoutError):
    """A partner thread did not answer within the time-out; names the CPUs involved.

    Also a :class:`TimeoutError` and a :class:`MeasurementError`.

    Examples
    --------
    >>> import corelat
    >>> try:
    ...     r = corelat.measure(timeout=1.0)  # doctest: +SKIP
    ... except corelat.MeasurementTimeout as e:
    ...     print("a partner stalled:", e)
    """


def unreadable(path, error, what=""):
    """The error for a file or folder ``path`` that could not be read (``error``, an :class:`OSError`):
    an :class:`InputFileNotFoundError` where it does not exist, else an :class:`InputError`."""
    cls = InputFileNotFoundError if isinstance(error, FileNotFoundError) else InputError
    return cls(f"cannot read {what}{os.fspath(path)}: {error.strerror or error}")
