"""The C extension (the measuring core), loaded on first use: reading and analysing files work without it."""

from __future__ import annotations

import importlib

from corelat._core.errors import MeasurementError


def extension():
    """The C extension, or a clear MeasurementError (a CorelatError) where it is not built."""
    try:
        # the compiled module: not Python source, so it has no place in the layers' import graph
        _corelat = importlib.import_module("corelat._corelat")
    except ImportError as e:
        raise MeasurementError(
            "measuring needs Linux on x86-64 or aarch64: corelat's measuring core (its C extension) is "
            f"not available here ({e}). Loading, analysing, comparing and plotting result files still work."
        ) from None
    return _corelat
