"""Text matrices written by other tools (and corelat's own CSV).

Understood layouts, told apart by their first line:

* core-to-core-latency's ``--csv`` (nviennot): a square lower triangle of mean one-way CAS latency,
  comma separated, no labels; empty cells on and above the diagonal.
* c2clat's table (rigtorp): whitespace separated, a header ``CPU`` followed by the CPU ids, then one
  row per CPU, ``cpu v v v ...``; values are the minimum one-way latency in whole ns of a load/store
  ping-pong on two cache lines, 0 on the diagonal. Its ``-p`` output (a gnuplot script with the
  same numbers between ``$data << EOD`` and ``EOD``, without CPU ids) is read too.
* corelat's labelled CSV (:meth:`LatencyResult.to_csv` with ``labelled=True``).
* core-to-core-latency's text output (what it prints, pasted into a file; told by its ``Num cores:``
  line): the CPU ids of its table's header, its ``mean±err`` cells read as means (the error is not
  kept), its round trips and samples in the metadata; the first table where it ran several benches.

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
    if _is_c2c_text(lines):
        return _c2c_text(lines, path, name)
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


def _is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


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
    words = [c.strip() for c in rows[0] if c.strip()]
    if len(rows[0]) > 1 and not all(_is_number(c) for c in words):  # column names: an index, a table
        raise InputError(f"{path}: not a core-to-core-latency matrix (a square lower triangle of numbers) "
                         f"nor corelat's labelled CSV (a header 'cpu,0,1,...'): its first row is a header "
                         f"({', '.join(w[:30] for w in words[:4])}{', ...' if len(words) > 4 else ''})")
    for r, row in enumerate(rows):  # the shape first: N lines of "x" must not allocate N x N
        if len(row) != n:
            raise InputError(f"{path}: not a core-to-core-latency matrix: row {r + 1} has {len(row)} cells, "
                             f"expected {n} (square matrix)")
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


# -- core-to-core-latency's text output -----------------------------------------------------------
# What it prints on stderr (src/main.rs and src/bench.rs), pasted into a file: header lines, then per
# bench a title, a table and Min/Max/Mean lines. The table's header holds the ids of the CPUs it
# measured (``--cores`` picks any), each row starts with its CPU's id and holds one cell
# ``{mean:>4.0}±{err:<2.0}`` per pair measured: the pairs below the diagonal for a symmetric bench,
# every pair but the diagonal for an asymmetric one (3, one-way).
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_C2C_FIELD = re.compile(r"\s*(CPU|Num cores|Using RDTSC to measure time|Num round trips per samples|"
                        r"Num iterations per samples|Num samples)\s*:\s*(.*?)\s*$")
_C2C_INTS = {"Num cores": "cores", "Num round trips per samples": "round_trips",
             "Num iterations per samples": "round_trips", "Num samples": "samples"}
_C2C_BENCH = re.compile(r"\s*([123])\)\s+\S")
_C2C_KERNELS = {"1": "cas", "2": "rw", "3": "oneway"}
_C2C_MEAN = re.compile(r"\s*Mean\s+latency:\s*(\d+(?:\.\d+)?)\s*ns\s*$")
_C2C_SUMMARY = re.compile(r"\s*(Min|Max)\s+latency:")
_C2C_CELL = re.compile(r"([^±]+)±([^±]*)")
_MOJIBAKE_PM = "\u00c2\u00b1"  # "±" as UTF-8 read as Latin-1, then saved again


def _is_c2c_text(lines):
    """core-to-core-latency's text output: its "Num cores:" line among the first lines (after a
    command line, a code fence or its "CPU:" line)."""
    head = [ln for ln in lines[:40] if ln.strip()][:8]
    return any(re.match(r"\s*(\x1b\[[0-9;]*m)*Num cores\s*:", ln) for ln in head)


def _c2c_text(lines, path, name):
    lines = [_ANSI.sub("", ln).replace(_MOJIBAKE_PM, "±") for ln in lines]
    info, tables, kernel, r = {}, [], None, 0
    while r < len(lines):
        ln = lines[r]
        words = ln.split()
        field = _C2C_FIELD.match(ln)
        if field:
            _c2c_field(info, field.group(1), field.group(2), path, r)
        elif _C2C_BENCH.match(ln):
            kernel = _C2C_KERNELS[_C2C_BENCH.match(ln).group(1)]
        elif ln.lstrip().startswith("Showing latency="):  # its first versions: one bench, a CAS ping-pong
            info["one_bench"] = True
        elif words and all(w.isdigit() for w in words):
            table, r = _c2c_table(lines, r, path, info.get("cores"))
            tables.append(dict(table, kernel=kernel or ("cas" if info.get("one_bench") else "unknown")))
            kernel = None
            continue
        elif tables and _C2C_MEAN.match(ln):
            tables[-1].setdefault("printed_mean", float(_C2C_MEAN.match(ln).group(1)))
        elif tables and "," in ln and "csv" not in tables[-1] and not _C2C_SUMMARY.match(ln):
            r = _c2c_csv_block(lines, r, tables[-1], path)
            continue
        r += 1
    if not tables:
        raise InputError(f"{path}: core-to-core-latency's text output with no table of latencies "
                         "(its header lines only: cut short?)")
    return _c2c_result(tables, info, path, name)


def _c2c_field(info, key, value, path, r):
    where = f"{path}: line {r + 1}"
    if key in info.get("_seen", ()):
        raise InputError(f"{where}: '{key}' given twice (two outputs pasted into one file?)")
    info.setdefault("_seen", set()).add(key)
    if key in _C2C_INTS:
        if not value.isdigit() or len(value) > 12:
            raise InputError(f"{where}: {key} {value[:40]!r} is not a count")
        info[_C2C_INTS[key]] = int(value)
    elif key == "CPU":
        info["cpu_model"] = value[:200]
    else:
        info["rdtsc"] = value.lower() == "true"


def _c2c_table(lines, r0, path, cores):
    """({"cpus", "cells", "symmetric"}, the line after the table) of the table whose header is line r0."""
    cpus = _labels(lines[r0].split(), path, r0)
    n = len(cpus)
    if cores is not None and n != cores:
        raise InputError(f"{path}: line {r0 + 1}: the table's header names {n} CPUs but 'Num cores' "
                         f"says {cores}")
    if n < 2:
        raise InputError(f"{path}: line {r0 + 1}: a table of {n} CPU; a latency matrix needs at least 2")
    rows = lines[r0 + 1: r0 + 1 + n]  # a short file cannot claim a long table: no n x n before the rows
    if len(rows) < n or any(not ln.strip() for ln in rows):
        got = next((k for k, ln in enumerate(rows) if not ln.strip()), len(rows))
        raise InputError(f"{path}: the table of line {r0 + 1} names {n} CPUs but has {got} rows "
                         "(truncated output?)")
    cells, symmetric = [], None
    for k, ln in enumerate(rows):
        r = r0 + 1 + k
        words = ln.split()
        if _label(words[0], path, r) != cpus[k]:
            raise InputError(f"{path}: line {r + 1} is the row for CPU {words[0]}, expected CPU {cpus[k]} "
                             "(rows follow the header's order)")
        if symmetric is None:  # its first row: empty for a symmetric bench, full for an asymmetric one
            symmetric = len(words) == 1
        want = k if symmetric else n - 1
        if len(words) - 1 != want:
            raise InputError(f"{path}: line {r + 1} (CPU {cpus[k]}) has {len(words) - 1} values, "
                             f"expected {want}")
        cells.append([_c2c_cell(w, path, r, c) for c, w in enumerate(words[1:])])
    return {"cpus": cpus, "cells": cells, "symmetric": symmetric, "line": r0 + 1}, r0 + 1 + n


def _c2c_cell(word, path, r, c):
    m = _C2C_CELL.fullmatch(word)
    if not m:
        raise InputError(f"{path}: line {r + 1}, value {c + 1}: {word[:40]!r} is not a mean±error cell")
    mean = _number(m.group(1), path, r, c)
    err = _number(m.group(2), path, r, c) if m.group(2) else np.nan
    return mean, err


def _c2c_matrix(table):
    n = len(table["cpus"])
    m = np.full((n, n), np.nan)
    for i, row in enumerate(table["cells"]):
        cols = range(i) if table["symmetric"] else [j for j in range(n) if j != i]
        for j, (mean, _err) in zip(cols, row):
            m[i, j] = mean
    return m


def _c2c_csv_block(lines, r0, table, path):
    """The CSV of the same means the tool writes on stdout with ``--csv`` (in a file of both streams):
    its full values in place of the table's whole ns. Returns the line after it."""
    n = len(table["cpus"])
    block = lines[r0: r0 + n]
    rows = list(csv.reader(io.StringIO("\n".join(block) + "\n")))
    if len(rows) != n or any(len(row) != n for row in rows):
        return r0 + 1  # not its CSV: a line of another kind, left alone as other stray lines are
    shown = _c2c_matrix(table)
    full = np.array([[_number(v, path, r0 + r, c) for c, v in enumerate(row)] for r, row in enumerate(rows)])
    if not np.array_equal(np.isnan(full), np.isnan(shown)) or (np.abs(full - shown) > 0.5 + 1e-9).any():
        raise InputError(f"{path}: the CSV lines from line {r0 + 1} do not match the table of line "
                         f"{table['line']} (its means rounded to whole ns): output of two runs?")
    table["csv"] = full
    return r0 + n


def _c2c_result(tables, info, path, name):
    first = tables[0]
    m = first.get("csv")
    if m is None:
        m = _c2c_matrix(first)
    warnings = []
    # Not a problem with the result (the notes): what the text cannot give a value-only result.
    notes = ["the ± after each mean (the standard error it prints) is not kept: a value-only result "
             "holds one value per pair",
             "means from the CSV printed beside the table" if "csv" in first
             else "means rounded to whole ns, as its table prints them"]
    if "printed_mean" in first:
        mean = float(np.nanmean(m))
        if abs(mean - first["printed_mean"]) > 0.55:
            warnings.append(f"its printed mean latency ({first['printed_mean']} ns) is not the mean of "
                            f"its table ({mean:.1f} ns): an edited file?")
    if len(tables) > 1:
        kernels = ", ".join(t["kernel"] for t in tables)
        warnings.append(f"the file holds {len(tables)} tables ({kernels}); the first ({first['kernel']}) "
                        "is read")
    md = {"source": "core-to-core-latency text", "statistic": TRIANGLE_STATISTIC, "path": path,
          "note": "mean over samples of round trip / 2 per pair, ns, as core-to-core-latency prints it",
          "notes": notes}
    if warnings:
        md["warnings"] = warnings
    md.update({k: info[k] for k in ("cpu_model", "round_trips", "samples", "rdtsc") if k in info})
    if "printed_mean" in first:
        md["printed_mean_ns"] = first["printed_mean"]
    return _result(m, first["cpus"], kernel=first["kernel"], name=name, metadata=md,
                   symmetric=first["symmetric"])
