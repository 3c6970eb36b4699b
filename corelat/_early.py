"""What the ``corelat`` command needs before anything heavy is imported.

``import corelat`` loads NumPy and the extension, a few tenths of a second in which a Ctrl-C would
print a traceback and an out-of-memory limit (``ulimit -v``) an import traceback. When (and only
when) this process is the ``corelat`` command (the console script or ``python -m corelat``), this
module, imported first by ``corelat/__init__.py``, installs a Ctrl-C handler that ends the command
quietly with status 130, and an excepthook that turns a failure while starting up into one line.
:func:`release` hands Ctrl-C back to Python's KeyboardInterrupt once ``corelat.cli.main`` is ready
to catch it. A program that merely imports corelat is left alone.

Only modules the interpreter has already loaded are used here (``_signal`` is the C half of
``signal``: importing ``signal`` itself builds enums, long enough for a Ctrl-C to land in it).
"""

import _signal as signal
import os
import sys

EXIT_FAILED, EXIT_INTERRUPTED = 1, 130


def running_as_command():
    """True when this process is the ``corelat`` console script or ``python -m corelat``."""
    if sys.argv and os.path.basename(sys.argv[0]) in ("corelat", "corelat.exe"):
        return True
    orig = getattr(sys, "orig_argv", ())  # Python 3.10+; 3.9 keeps its default behaviour
    return any(a == "-m" and b in ("corelat", "corelat.__main__") for a, b in zip(orig, orig[1:]))


def _interrupted(signum, frame):
    os.write(2, b"corelat: interrupted\n")
    os._exit(EXIT_INTERRUPTED)


def _startup_failed(kind, value, tb):
    if issubclass(kind, KeyboardInterrupt):
        _interrupted(None, None)
    if os.environ.get("CORELAT_DEBUG"):
        return sys.__excepthook__(kind, value, tb)
    hint = ""
    if issubclass(kind, (MemoryError, ImportError)) or "memory" in str(value).lower():
        hint = " (out of memory while starting, or a broken install: is the memory limit, ulimit -v, too low?)"
    why = " ".join(str(value).split())
    text = f"corelat: error: cannot start: {kind.__name__}{': ' + why[:160] if why else ''}{hint}\n"
    try:
        os.write(2, text.encode("utf-8", "replace"))
    finally:
        os._exit(EXIT_FAILED)


def install():
    """Quiet Ctrl-C and one-line start-up failures, for the command only."""
    if running_as_command() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        try:
            signal.signal(signal.SIGINT, _interrupted)
        except ValueError:  # imported from a thread other than the main one: not the command starting
            return
        sys.excepthook = _startup_failed


def release():
    """Ctrl-C raises KeyboardInterrupt again (``main`` catches it from here on)."""
    if signal.getsignal(signal.SIGINT) is _interrupted:
        try:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        except ValueError:
            pass
    if sys.excepthook is _startup_failed:
        sys.excepthook = sys.__excepthook__


install()
