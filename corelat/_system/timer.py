"""The timer corelat measures with, chosen and calibrated once per process.

The hardware counter (x86 TSC, aarch64 ``cntvct_el0``) when it runs at a constant rate, otherwise
``clock_gettime``. Imported lazily by everything that measures, so that loading and analysing result
files works where the extension is not built.
"""

from __future__ import annotations

import os

from corelat._core.binding import extension
from corelat._core.errors import InputError
from corelat._core.text import shortened
from corelat._system import sysinfo as _sysinfo

_timer = None


def timer_info() -> dict:
    """The timer used to measure, choosing and calibrating it on first use.

    The hardware counter (x86 TSC, aarch64 ``cntvct_el0``) is used when it runs at a constant rate
    (CPUID's invariant-TSC bit, or the kernel's ``constant_tsc`` and ``nonstop_tsc`` flags);
    otherwise ``clock_gettime``. Set ``CORELAT_TIMER=clock`` to force the fallback.

    Returns
    -------
    dict
        ``name`` (``"tsc"``, ``"cntvct_el0"`` or ``"clock"``), ``ticks_per_ns``,
        ``frequency_hz``, ``resolution_ticks`` and ``resolution_ns``, ``overhead_ticks`` (cost of
        one read) and ``overhead_serial_ticks`` (serialized), ``invariant`` and the flags it was
        decided from, and ``delta_histogram`` (``(ticks, count)`` of back-to-back reads).

    Raises
    ------
    InputError
        For a ``CORELAT_TIMER`` other than ``hw`` or ``clock``.
    MeasurementError
        Where the measuring core is not available (not Linux, or not built).

    Examples
    --------
    >>> import corelat
    >>> info = corelat.timer_info()
    >>> info["name"] in ("tsc", "cntvct_el0", "clock"), info["ticks_per_ns"] > 0
    (True, True)
    """
    global _timer
    if _timer is None:
        ext = extension()
        hw = ext.hw_timer()
        forced = os.environ.get("CORELAT_TIMER", "").strip().lower()
        if forced not in ("", "hw", "clock"):
            raise InputError(f"CORELAT_TIMER={shortened(repr(forced), 40)}: use 'hw' or 'clock'")
        _, flags = _sysinfo.cpuinfo()
        invariant = hw["invariant"] or _sysinfo.tsc_flags_ok(flags) or hw["name"] == "cntvct_el0"
        kind = forced or ("hw" if hw["available"] and invariant else "clock")
        info = ext.timer_init(kind)
        info["invariant"] = bool(invariant) if kind == "hw" else True
        info["kernel_flags_ok"] = _sysinfo.tsc_flags_ok(flags)
        _timer = info
    return dict(_timer)
