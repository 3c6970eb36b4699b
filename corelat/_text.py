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
    """A matrix cell like ``38±6`` (one decimal below 10 ns, where rounding would hide the value)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    digits = 1 if abs(v) < 10 else 0
    s = f"{v:.{digits}f}"
    if err is not None and not math.isnan(err):
        s += f"±{err:.{1 if err < 1 or (digits and err < 10) else 0}f}"
    return s


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
    m = result.statistic(statistic)
    e = result.err if statistic == "median" else (result.sem if statistic == "mean" else None)
    if result.value_only:
        e = None  # one value per pair: no spread to show
    symmetric = result.metadata.get("symmetric", True)
    n = result.n
    cells = [[""] * n for _ in range(n)]
    for i in range(n):
        for j in range(n):
            if i != j and (j < i or not symmetric):
                cells[i][j] = value_err(float(m[i, j]), None if e is None else float(e[i, j]))
    width = max([len(c) for row in cells for c in row] + [len(str(c)) for c in result.cpus] + [3]) + 1
    label_w = max(len(str(c)) for c in result.cpus) + 1
    cols = n if not symmetric else n - 1
    lines = [" " * label_w + "".join(f"{c!s:>{width}}" for c in result.cpus[:cols])]
    for i, c in enumerate(result.cpus):
        row = cells[i][: (i if symmetric else n)]
        lines.append(f"{c!s:>{label_w}}" + "".join(f"{x:>{width}}" for x in row))
    return "\n".join(lines)


def latency_summary(result, statistic="median"):
    """The Min/Max/Mean lines core-to-core-latency users know."""
    s = result.summary(statistic)
    out = []
    for key, label in (("min", "Min  latency"), ("max", "Max  latency")):
        d = s[key]
        err = f" ±{d['err']:.1f}" if d["err"] is not None else ""
        out.append(f"{label}: {d['value']:.1f}ns{err} cores: ({d['cpus'][0]},{d['cpus'][1]})")
    out.append(f"Mean latency: {s['mean']:.1f}ns")
    return "\n".join(out)
