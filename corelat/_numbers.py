"""How numbers are written: a latency with the precision its data has, and counts that vary.

One rule for every table, matrix and message (the CLI, reports, plots): a value is written to the
digits its uncertainty supports, and an uncertainty is never written as a zero width that would
read as "exact".
"""

import math


def _missing(v):
    return v is None or (isinstance(v, float) and math.isnan(v))


def fmt_ns(v):
    """A latency in ns without an uncertainty, as a matrix cell: one decimal below 10 ns, else none."""
    if _missing(v):
        return ""
    return f"{v:.1f}" if abs(v) < 10 else f"{v:.0f}"


def fmt_value(v, err=None):
    """``value±err`` written to the precision the data has: ``38±6``, ``30.24±0.04``, ``8.4±0.6``.

    The uncertainty keeps one significant digit; the value as many decimals (at most two; at least
    one below 10 ns, where rounding would hide it). A zero-width interval (samples that repeat
    exactly, e.g. a coarse timer) is written ``±<0.1``: below what is shown, not exact. Without
    ``err`` (or with NaN) the value is written as by :func:`fmt_ns`, without ``±``.
    """
    if _missing(v):
        return ""
    if _missing(err) or err < 0:
        return fmt_ns(v)
    if err == 0:
        return f"{v:.1f}±<0.1"
    err_digits = max(0, -math.floor(math.log10(err)))
    text_err = f"{err:.{err_digits}f}"
    if float(text_err) >= 10 ** (1 - err_digits) and err_digits > 0:  # 0.096 rounds to 0.10: one digit fewer
        err_digits -= 1
        text_err = f"{err:.{err_digits}f}"
    digits = max(min(err_digits, 2), 1 if abs(v) < 10 else 0)
    return f"{v:.{digits}f}±{text_err}"


def fmt_counts(counts):
    """How many of something each item has, when it differs: ``98-106 (median 104)``, or ``300``."""
    counts = sorted(int(c) for c in counts)
    if not counts:
        return "0"
    lo, hi = counts[0], counts[-1]
    if lo == hi:
        return str(lo)
    mid = counts[len(counts) // 2] if len(counts) % 2 else (counts[len(counts) // 2 - 1] + counts[len(counts) // 2]) / 2
    return f"{lo}-{hi} (median {mid:g})"
