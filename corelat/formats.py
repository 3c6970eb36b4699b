"""Text matrices written by other tools (and corelat's own CSV)."""

import csv
import os

import numpy as np

from .errors import InputError


def _cells(path):
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = [r for r in csv.reader(f)]
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise InputError(f"cannot read {path}: {e}") from None
    while rows and not any(c.strip() for c in rows[-1]):
        rows.pop()
    if not rows:
        raise InputError(f"{path}: empty file")
    return rows


def _number(text, path, r, c):
    text = text.strip()
    if text == "":
        return np.nan
    try:
        v = float(text)
    except ValueError:
        raise InputError(f"{path}: row {r + 1}, column {c + 1}: {text!r} is not a number") from None
    if not np.isfinite(v) or v < 0:
        raise InputError(f"{path}: row {r + 1}, column {c + 1}: {text!r} is not a latency")
    return v


def load_text(path):
    """Read a CSV latency matrix: core-to-core-latency's unlabelled lower triangle or a labelled one."""
    from .io import from_matrix

    rows = _cells(path)
    name = os.path.splitext(os.path.basename(path))[0]
    first = rows[0][0].strip().lower() if rows[0] else ""
    if first == "cpu":
        cpus = [_label(c, path) for c in rows[0][1:]]
        n = len(cpus)
        if len(rows) - 1 != n:
            raise InputError(f"{path}: {n} CPU labels but {len(rows) - 1} rows")
        m = np.full((n, n), np.nan)
        for r, row in enumerate(rows[1:], start=1):
            if len(row) != n + 1 or _label(row[0], path) != cpus[r - 1]:
                raise InputError(f"{path}: row {r + 1} does not match the header")
            m[r - 1] = [_number(v, path, r, c + 1) for c, v in enumerate(row[1:])]
        return from_matrix(m, cpus, kernel="unknown", name=name,
                           metadata={"source": "corelat labelled csv", "path": path})
    n = len(rows)
    m = np.full((n, n), np.nan)
    for r, row in enumerate(rows):
        if len(row) != n:
            raise InputError(f"{path}: row {r + 1} has {len(row)} cells, expected {n} (square matrix)")
        m[r] = [_number(v, path, r, c) for c, v in enumerate(row)]
    upper = np.triu(~np.isnan(m), 1)
    if upper.any():
        raise InputError(f"{path}: values above the diagonal; expected a lower-triangular matrix")
    return from_matrix(m, None, kernel="cas", name=name,
                       metadata={"source": "core-to-core-latency csv", "statistic": "mean", "path": path})


def _label(text, path):
    try:
        return int(text.strip())
    except ValueError:
        raise InputError(f"{path}: CPU label {text!r} is not an integer") from None
