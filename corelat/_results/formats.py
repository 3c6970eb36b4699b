"""Text matrices written by other tools (and corelat's own CSV).

Understood layouts, told apart by their first line:

* core-to-core-latency's ``--csv`` (nviennot): a square lower triangle of mean one-way CAS latency,
  comma separated, no labels; empty cells on and above the diagonal.
* c2clat's table (rigtorp): whitespace separated, a header ``CPU`` followed by the CPU ids, then one
  row per CPU, ``cpu v v v ...``; values are the minimum one-way latency in whole ns of a load/store
  ping-pong on two cache lines, 0 on the diagonal. Its ``-p`` output (a gnuplot script with the
  same numbers between ``$data << EOD`` and ``EOD``, without CPU ids) is read too.
* corelat's labelled CSV (:meth:`LatencyResult.to_csv` with ``labelled=True``).

corelat's CSV (either layout) starts with a line ``# statistic=NAME`` where its values are not
core-to-core-latency's means; a triangle without that line holds means, as that tool's files do.

Every reader gives a value-only :class:`~corelat._results.latency.LatencyResult` named after the file.
"""

import csv
import io
import os
import re

import numpy as np

from corelat._core import files as _files
from corelat._core.errors import InputError, unreadable
from corelat._core.types import STATISTICS
from corelat._results.latency import LatencyResult
from corelat._results.matrix import TRIANGLE_STATISTIC

_STATISTIC_LINE = re.compile(r"\s*#\s*statistic\s*=\s*(\S+)")


def load_text(path):
    """Read a latency matrix written as text; see the module documentation for the layouts."""
    path = os.fspath(path)
    text = _read(path)
    lines = text.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    first = next((ln for ln in lines if ln.strip()), None)
    if first is None:
        raise InputError(f"{path}: empty file")
    name = file_name(path)
    if any(ln.strip().startswith("$data << EOD") for ln in lines):
        return _c2clat_plot(lines, path, name)
    words = first.split()
    if "," not in first and words[0].lower() == "cpu":
        return _c2clat(lines, path, name)
    head = 0
    while head < len(lines) and lines[head].lstrip().startswith("#"):
        head += 1
    said = _said_statistic(lines[:head], path)
    return _csv("\n".join(lines[head:]) + "\n", path, name, said)


def _said_statistic(comments, path):
    """The statistic the leading ``#`` lines name (``# statistic=median``): "" where none does, None
    for ``unknown``. Other comment lines are left alone."""
    said = [m.group(1) for m in (_STATISTIC_LINE.match(c) for c in comments) if m]
    if len(said) > 1:
        raise InputError(f"{path}: the file says its statistic twice ({', '.join(said)})")
    if not said:
        return ""
    if said[0] == "unknown":
        return None
    if said[0] not in STATISTICS:
        raise InputError(f"{path}: unknown statistic {said[0]!r} in its first lines (expected one of "
                         f"{', '.join(STATISTICS)} or unknown)")
    return said[0]


def file_name(path):
    """The name a result read from ``path`` gets: the file name without its extension."""
    base = os.path.basename(os.fspath(path))
    stem, ext = os.path.splitext(base)
    return stem if ext.lower() in (".csv", ".txt", ".out", ".log", ".dat", ".npz") and stem else base


def _read(path):
    try:
        data = _files.read_bytes(path, _files.MAX_TEXT_BYTES)
    except OSError as e:
        raise unreadable(path, e) from None
    if b"\0" in data:
        raise InputError(f"{path}: a binary file, not a latency matrix")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text, not a latency matrix") from None


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


def _label(text, path, r):
    try:
        v = int(text.strip())
    except ValueError:
        raise InputError(f"{path}: line {r + 1}: CPU label {text.strip()!r} is not an integer") from None
    if v < 0:
        raise InputError(f"{path}: line {r + 1}: CPU label {v} is negative")
    return v


def _labels(words, path, r):
    cpus = [_label(w, path, r) for w in words]
    if not cpus:
        raise InputError(f"{path}: the header names no CPU")
    seen = set()
    for c in cpus:  # a set, not count(): a header of 40,000 labels took a minute
        if c in seen:
            raise InputError(f"{path}: CPU {c} appears twice in the header")
        seen.add(c)
    return cpus


def _result(m, cpus, **kw):
    """``LatencyResult.from_matrix``, its refusals naming the file."""
    try:
        return LatencyResult.from_matrix(m, cpus, **kw)
    except InputError as e:
        raise InputError(f"{kw['metadata']['path']}: {e}") from None


# -- c2clat -----------------------------------------------------------------------------------------
def _c2clat(lines, path, name):
    rows = [(r, ln.split()) for r, ln in enumerate(lines) if ln.strip()]
    (r0, header), body = rows[0], rows[1:]
    cpus = _labels(header[1:], path, r0)
    n = len(cpus)
    if len(body) != n:
        raise InputError(f"{path}: {n} CPUs in the header but {len(body)} rows (truncated c2clat output?)")
    for r, words in body:  # the shape first: the matrix is allocated for a file that can fill it
        if len(words) != n + 1:
            raise InputError(f"{path}: line {r + 1} has {len(words) - 1} values, expected {n}")
    m = np.full((n, n), np.nan)
    for k, (r, words) in enumerate(body):
        if _label(words[0], path, r) != cpus[k]:
            raise InputError(f"{path}: line {r + 1} is for CPU {words[0]}, expected CPU {cpus[k]} "
                             "(rows must follow the header's order)")
        m[k] = [_number(v, path, r, c + 1) for c, v in enumerate(words[1:])]
    return _result(m, cpus, kernel="rw", name=name, metadata=_c2clat_metadata(path))


def _c2clat_plot(lines, path, name):
    start = next(r for r, ln in enumerate(lines) if ln.strip().startswith("$data << EOD"))
    end = next((r for r in range(start + 1, len(lines)) if lines[r].strip() == "EOD"), None)
    if end is None:
        raise InputError(f"{path}: c2clat plot output without the closing 'EOD' (truncated?)")
    body = [(r, lines[r].split()) for r in range(start + 1, end) if lines[r].strip()]
    n = len(body)
    if n < 2:
        raise InputError(f"{path}: c2clat plot output with {n} rows; a matrix needs at least 2")
    for r, words in body:  # the shape first: 40,000 one-word rows must not allocate 40,000 x 40,000
        if len(words) != n:
            raise InputError(f"{path}: line {r + 1} has {len(words)} values, expected {n} (square matrix)")
    m = np.full((n, n), np.nan)
    for k, (r, words) in enumerate(body):
        m[k] = [_number(v, path, r, c) for c, v in enumerate(words)]
    md = _c2clat_metadata(path)
    md["warnings"] = [("c2clat's plot output does not record CPU ids: CPUs are numbered 0..n-1 in "
                      "the order c2clat measured them (its allowed CPUs, ascending)")]
    return _result(m, None, kernel="rw", name=name, metadata=md)


def _c2clat_metadata(path):
    return {
        "source": "c2clat",
        "statistic": "min",
        "note": "minimum over samples of round trip / 2, whole ns; load/store on two cache lines",
        "path": path,
    }


# -- CSV: core-to-core-latency and corelat's labelled matrix -------------------------------------
def _csv(text, path, name, said):
    """``said``: the statistic its ``# statistic=`` line names ("" where it has none, None for
    unknown)."""
    rows = _csv_rows(text, path)
    first = rows[0][0].strip().lower() if rows[0] else ""
    if first == "cpu":
        return _labelled_csv(rows, path, name, said or None)
    return _triangle_csv(rows, path, name, TRIANGLE_STATISTIC if said == "" else said)


def _csv_rows(text, path):
    try:
        rows = list(csv.reader(io.StringIO(text)))
    except csv.Error as e:
        raise InputError(f"{path}: not a CSV latency matrix ({e})") from None
    # Drop trailing blank lines (not rows of empty cells: a lower triangle starts with one).
    while rows and len(rows[-1]) <= 1 and not "".join(rows[-1]).strip():
        rows.pop()
    if not rows:
        raise InputError(f"{path}: empty file")
    return rows


def _labelled_csv(rows, path, name, statistic):
    cpus = _labels(rows[0][1:], path, 0)
    n = len(cpus)
    if len(rows) - 1 != n:
        raise InputError(f"{path}: {n} CPU labels but {len(rows) - 1} rows")
    for r, row in enumerate(rows[1:], start=1):  # the shape first, before allocating n x n
        if len(row) != n + 1:
            raise InputError(f"{path}: row {r + 1} does not match the header")
    m = np.full((n, n), np.nan)
    for r, row in enumerate(rows[1:], start=1):
        if _label(row[0], path, r) != cpus[r - 1]:
            raise InputError(f"{path}: row {r + 1} does not match the header")
        m[r - 1] = [_number(v, path, r, c + 1) for c, v in enumerate(row[1:])]
    metadata = {"source": "corelat labelled csv", "path": path}
    if statistic:
        metadata["statistic"] = statistic
    return _result(m, cpus, kernel="unknown", name=name, metadata=metadata)


def _triangle_csv(rows, path, name, statistic):
    n = len(rows)
    if n < 2:
        raise InputError(f"{path}: one row only; a latency matrix needs at least 2 CPUs")
    for r, row in enumerate(rows):  # the shape first: N lines of "x" must not allocate N x N
        if len(row) != n:
            raise InputError(f"{path}: row {r + 1} has {len(row)} cells, expected {n} (square matrix)")
    m = np.full((n, n), np.nan)
    for r, row in enumerate(rows):
        m[r] = [_number(v, path, r, c) for c, v in enumerate(row)]
    upper = np.triu(~np.isnan(m), 1)
    if upper.any():
        raise InputError(f"{path}: values above the diagonal; expected a lower-triangular matrix")
    if not np.tril(~np.isnan(m), -1).any():
        raise InputError(f"{path}: no values below the diagonal")
    # The CSV does not record which of core-to-core-latency's kernels (cas, rw, one-way) made it.
    metadata = {"source": "core-to-core-latency csv", "path": path}
    if statistic:
        metadata["statistic"] = statistic
    return _result(m, None, kernel="unknown", name=name, metadata=metadata)
