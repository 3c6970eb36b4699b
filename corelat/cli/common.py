"""Helpers shared by CLI commands: CPU arguments, output paths, matrix printing."""

import math
import os
import sys

from .._errors import InputError


def check_output_path(path, suffixes=(".npz", ".csv")):
    """Fail early (before minutes of measuring) if ``path`` cannot be written."""
    if suffixes and not path.lower().endswith(tuple(suffixes)):
        raise InputError(f"output file {path!r} must end in {' or '.join(suffixes)}")
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise InputError(f"output path {path!r} is a directory")
    if not os.path.isdir(folder):
        raise InputError(f"cannot write {path!r}: folder {folder!r} does not exist")
    # Try for real: permission bits say nothing for root, read-only mounts or /proc.
    existed = os.path.exists(path)
    try:
        with open(path, "ab"):
            pass
    except OSError as e:
        raise InputError(f"cannot write {path!r}: {e.strerror or e}") from None
    if not existed:
        os.unlink(path)
    return path


def fmt_value(v, err=None):
    """A cell like ``38±6`` (one decimal below 10 ns, where rounding would hide the value)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    digits = 1 if abs(v) < 10 else 0
    s = f"{v:.{digits}f}"
    if err is not None and not math.isnan(err):
        s += f"±{err:.{1 if err < 1 or (digits and err < 10) else 0}f}"
    return s


def matrix_text(result, statistic="median"):
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
                cells[i][j] = fmt_value(float(m[i, j]), None if e is None else float(e[i, j]))
    width = max([len(c) for row in cells for c in row] + [len(str(c)) for c in result.cpus] + [3]) + 1
    label_w = max(len(str(c)) for c in result.cpus) + 1
    cols = n if not symmetric else n - 1
    lines = [" " * label_w + "".join(f"{c!s:>{width}}" for c in result.cpus[:cols])]
    for i, c in enumerate(result.cpus):
        row = cells[i][: (i if symmetric else n)]
        lines.append(f"{c!s:>{label_w}}" + "".join(f"{x:>{width}}" for x in row))
    return "\n".join(lines)


def summary_text(result, statistic="median"):
    """The Min/Max/Mean lines core-to-core-latency users know."""
    s = result.summary(statistic)
    out = []
    for key, label in (("min", "Min  latency"), ("max", "Max  latency")):
        d = s[key]
        err = f" ±{d['err']:.1f}" if d["err"] is not None else ""
        out.append(f"{label}: {d['value']:.1f}ns{err} cores: ({d['cpus'][0]},{d['cpus'][1]})")
    out.append(f"Mean latency: {s['mean']:.1f}ns")
    return "\n".join(out)


def stderr_is_tty():
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False
