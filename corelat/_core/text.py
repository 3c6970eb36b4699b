"""Text output shared by every result and command: one number formatter, one table printer."""

import math


def number(v, unit="", *, digits=None):
    """``v`` for a table cell: one decimal below 100 (none above), ``-`` for None/NaN/inf.

    ``digits`` fixes the decimals instead.
    """
    if v is None:
        return "-"
    v = float(v)
    if not math.isfinite(v):
        return "-"
    if digits is None:
        digits = 1 if abs(v) < 100 else 0
    return f"{v:.{digits}f}{unit}"


def ratio(v):
    """A ratio cell like ``1.85x`` (``-`` when unknown)."""
    return "-" if v is None or not math.isfinite(float(v)) else f"{float(v):.2f}x"


def value_err(v, err=None):
    """``value±err`` written to the precision the data has: ``38±6``, ``30.24±0.04``, ``8.4±0.6``.

    The uncertainty keeps one significant digit; the value as many decimals (at most two; at least
    one below 10 ns, where rounding would hide it). A zero-width interval (samples that repeat
    exactly, e.g. a coarse timer) is written ``±<0.1``: below what is shown, never a zero width
    that reads as "exact". Without ``err`` (or NaN): one decimal below 10 ns, none above.
    """
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if err is None or math.isnan(err) or err < 0:
        return f"{v:.1f}" if abs(v) < 10 else f"{v:.0f}"
    if err == 0:
        return f"{v:.1f}±<0.1"
    err_digits = max(0, -math.floor(math.log10(err)))
    if err_digits and float(f"{err:.{err_digits}f}") >= 10 ** (1 - err_digits):  # 0.096 -> 0.1
        err_digits -= 1
    digits = max(min(err_digits, 2), 1 if abs(v) < 10 else 0)
    return f"{v:.{digits}f}±{err:.{err_digits}f}"


def counts(values):
    """How many of something each item has, when that differs: ``98-106 (median 104)``, or ``300``."""
    values = sorted(int(c) for c in values)
    if not values:
        return "0"
    lo, hi = values[0], values[-1]
    if lo == hi:
        return str(lo)
    k = len(values)
    mid = values[k // 2] if k % 2 else (values[k // 2 - 1] + values[k // 2]) / 2
    return f"{lo}-{hi} (median {mid:g})"


def table(header, rows, *, left=(), sep="  "):
    """Columns padded to their widest cell: right-aligned, except the column indices in ``left``.

    ``header`` is a list of column titles (None for no header line); ``rows`` lists of cells
    (converted with ``str``). Returns the lines joined by newlines, without a trailing one.
    """
    rows = [[str(c) for c in r] for r in rows]
    lines = ([list(map(str, header))] if header is not None else []) + rows
    if not lines:
        return ""
    ncol = max(len(r) for r in lines)
    widths = [max(len(r[i]) for r in lines if i < len(r)) for i in range(ncol)]

    def fmt(r):
        cells = [c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))]
        return sep.join(cells).rstrip()

    return "\n".join(fmt(r) for r in lines)


def matrix(result, statistic="median"):
    """The lower-triangular matrix with CPU ids on both axes, one ``value±err`` cell per pair."""
    return "\n".join(matrix_lines(result, statistic))


def _row_cells(m, e, i, cols):
    """The cells of row ``i`` up to column ``cols`` (empty on the diagonal), as :func:`value_err`
    writes them; without an uncertainty the common case is written here, without a call per cell."""
    vals = m[i, :cols].tolist()
    if e is None:
        cells = ["" if v != v else (f"{v:.1f}" if -10 < v < 10 else f"{v:.0f}") for v in vals]
    else:
        cells = [value_err(v, x) for v, x in zip(vals, e[i, :cols].tolist())]
    if i < cols:
        cells[i] = ""
    return cells


def matrix_lines(result, statistic="median"):
    """:func:`matrix` line by line (the header first): the text of a 4,000-CPU matrix (16 M cells) is
    never held whole, as cells or as one string; each row is formatted twice instead (once for the
    column width, once to write it)."""
    m = result.statistic(statistic)
    e = result.err if statistic == "median" else (result.sem if statistic == "mean" else None)
    if result.value_only:
        e = None  # one value per pair: no spread to show
    symmetric = result.metadata.get("symmetric", True)
    n = result.n

    def cols(i):
        return i if symmetric else n

    widest = 3
    for i in range(n):
        widest = max([widest, *map(len, _row_cells(m, e, i, cols(i)))])
    width = max([widest, *(len(str(c)) for c in result.cpus)]) + 1
    label_w = max(len(str(c)) for c in result.cpus) + 1
    yield " " * label_w + "".join(f"{c!s:>{width}}" for c in result.cpus[: n if not symmetric else n - 1])
    for i, c in enumerate(result.cpus):
        yield f"{c!s:>{label_w}}" + "".join(x.rjust(width) for x in _row_cells(m, e, i, cols(i)))


def latency_summary(result, statistic="median"):
    """The Min/Max/Mean lines core-to-core-latency users know."""
    s = result.summary(statistic=statistic)
    out = []
    for key, label in (("min", "Min  latency"), ("max", "Max  latency")):
        d = s[key]
        if d["err"] is None:  # core-to-core-latency's habit: one decimal
            value, err = f"{d['value']:.1f}", ""
        else:  # the ± of the statistic shown, to the precision the data has
            value, _, err = value_err(d["value"], d["err"]).partition("±")
            err = f" ±{err}"
        out.append(f"{label}: {value}ns{err} cores: ({d['cpus'][0]},{d['cpus'][1]})")
    out.append(f"Mean latency: {s['mean']:.1f}ns")
    return "\n".join(out)


#: Characters shown as they are although ``str.isprintable`` says no: line breaks and tabs lay text out.
_LAYOUT = frozenset("\n\t")


def _escape(c):
    o = ord(c)
    return f"\\x{o:02x}" if o < 0x100 else (f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}")


def _fast_printable(text, keep):
    for c in keep:
        text = text.replace(c, "")
    return text.isprintable()


def printable(text, keep=_LAYOUT):
    """``text`` with every character a terminal could act on written as an escape (``\\x1b``).

    Control characters (ESC, CR, BEL, ...), other unprintable ones (bidirectional overrides, ...) and
    lone surrogates are escaped; newline and tab are kept (``keep``). What a file or the system says
    (a CPU model, a host name, a file name) reaches a terminal only through here, so that a crafted
    name cannot move the cursor, retitle the window or hide text.
    """
    if _fast_printable(text, keep):
        return text
    return "".join(c if c.isprintable() or c in keep else _escape(c) for c in text)


def shortened(text, limit=80):
    """``text`` cut to about ``limit`` characters (printable), saying how long it was when cut."""
    text = printable(str(text), keep=frozenset())
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters)"
