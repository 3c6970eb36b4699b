"""The timer corelat measures with, chosen and calibrated once per process.

The hardware counter (x86 TSC, aarch64 ``cntvct_el0``) when it runs at a constant rate, otherwise
``clock_gettime``. Imported lazily by everything that measures, so that loading and analysing result
files works where the extension is not built.
"""

from __future__ import annotations

import os
import threading

from corelat._core.binding import extension
from corelat._core.errors import InputError
from corelat._core.text import shortened
from corelat._system import sysinfo as _sysinfo

_timer = None
# Calibrating takes ~30 ms with the GIL released: threads asking at once wait for the first one's answer
# rather than each calibrating (and switching the C side's active timer under the others' feet).
_lock = threading.Lock()


def _new_lock_in_child():
    # A fork copies only the forking thread: a lock another thread held while calibrating would stay
    # held in the child for good. The child gets a free lock, and calibrates itself if it must.
    global _lock
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_lock_in_child)


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
    with _lock:
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
