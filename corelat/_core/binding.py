"""The C extension (the measuring core), loaded on first use: reading and analysing files work without it."""

from __future__ import annotations

import importlib
import platform
import sys

from corelat._core.errors import MeasurementError
from corelat._core.extras import install_command

_MODULE = "corelat._corelat"
_STILL_WORKS = "Loading, analysing, comparing and plotting result files still work."


def _supported():
    """True on the platforms the extension is built for (Linux on x86-64 or aarch64)."""
    return sys.platform.startswith("linux") and platform.machine().lower() in ("x86_64", "amd64", "aarch64",
                                                                                "arm64")


def why_missing(e, supported=None):
    """What to tell a user whose import of the extension raised ``e``."""
    supported = _supported() if supported is None else supported
    why = " ".join(str(e).split())
    if not supported:
        return (f"measuring needs Linux on x86-64 or aarch64: corelat's measuring core (its C extension) is "
                f"not available here ({why}). {_STILL_WORKS}")
    if isinstance(e, ModuleNotFoundError) and e.name in (_MODULE, None):
        return ("this corelat was installed without its measuring core (the C extension: built with "
                "CORELAT_NO_EXTENSION=1, or where no C compiler was found); reinstall it with a C compiler "
                f"and without CORELAT_NO_EXTENSION: {install_command(None)} --force-reinstall --no-deps "
                f"--no-binary corelat. {_STILL_WORKS}")
    memory = "memory" in why.lower() or "map" in why.lower()
    hint = (" (the address-space limit, ulimit -v, leaves too little to load it: raise the limit)" if memory
            else " (a broken install? reinstall corelat)")
    return f"corelat's measuring core (its C extension) failed to load: {why}{hint}. {_STILL_WORKS}"


def extension():
    """The C extension, or a clear MeasurementError (a CorelatError) where it is not built."""
    try:
        # the compiled module: not Python source, so it has no place in the layers' import graph
        _corelat = importlib.import_module(_MODULE)
    except ImportError as e:
        raise MeasurementError(why_missing(e)) from None
    return _corelat
