"""Exceptions raised by corelat.

``InputError`` is a ``ValueError`` for arguments that make no sense (the CLI answers them with exit
status 2); ``MeasurementError`` and ``MeasurementTimeout`` come from a measurement that started and
could not finish (exit status 1).
"""


class CorelatError(Exception):
    """Base class of corelat's own errors."""


class InputError(CorelatError, ValueError):
    """A bad argument: unknown or disallowed CPU, nonsense size, unknown kernel, corrupt file."""


class InputTypeError(InputError, TypeError):
    """An argument of the wrong type (a CPU id that is not an integer, a topology that is not one)."""


class InputFileNotFoundError(InputError, FileNotFoundError):
    """A file or folder that an argument names does not exist."""


class MeasurementError(CorelatError, RuntimeError):
    """A measurement started but failed (a thread could not be created or pinned, ...)."""


class MeasurementTimeout(MeasurementError, TimeoutError):
    """A partner thread did not answer within the time-out; names the CPUs involved."""
