"""Helpers of :class:`~corelat.LatencyResult` that work on plain matrices: the per-pair flags, the
CSV layouts, a result's arrays from one value per pair, and the order ``ordered()`` asks for."""

from __future__ import annotations

import enum
import io
from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np

from corelat._core.errors import InputError, InputTypeError
from corelat._core.files import atomic_write
from corelat._core.types import RESULT_ORDERS, Ordering
from corelat._results import schema as _schema
from corelat._system.validate import check_order


class PairFlag(enum.IntFlag):
    """Per-pair bits in :attr:`LatencyResult.flags`.

    An :class:`enum.IntFlag`: a cell's value is the OR of the bits that apply to it.

    Examples
    --------
    >>> import corelat
    >>> r = corelat.load(corelat.example_files()[0])
    >>> corelat.PairFlag.MIRRORED in corelat.PairFlag(int(r.flags[0, 1]))
    True
    """

    MEASURED = 1  #: measured directly in this orientation
    MIRRORED = 2  #: copied from the measured opposite orientation (symmetric kernels)
    ESTIMATED = 4  #: not measured: estimated from similar pairs (sampling strategies)
    MIGRATED = 8  #: some samples were dropped because a thread was not on its CPU
    UNSTABLE = 16  #: spread of the samples above the stability threshold
    BIMODAL = 32  #: samples fall in two clearly separated groups
    TARGET_NOT_MET = 64  #: precision target not reached within the time budget
    RETESTED = 128  #: re-measured at the end of the sweep; first attempt kept in extras
    VALUE_ONLY = 256  #: a single value per pair from another tool's file, not raw samples
    NOT_REACHED = 512  #: not measured nor estimated: a time budget ran out first (its cells are NaN)


#: What a record holds per pair, besides ``cpus``, ``count`` and ``flags``.
RECORD_STATISTICS = ("median", "err", "mean", "min", "max", "std")


#: The statistics of one sample per pair that are that sample itself.
_ONE_SAMPLE_VIEWS = frozenset({"median", "mean", "min", "max", "ci"})


def cached_statistic(cache, samples, key, fn):
    """``fn(samples)`` kept read-only in ``cache`` under ``key`` (a result's statistic, computed once)."""
    if key not in cache and samples.shape[-1] == 1 and key in _ONE_SAMPLE_VIEWS:
        # One sample per pair (a value-only result): these statistics are the sample itself, a
        # read-only view of it, not a matrix more each (a 4,000-CPU file's is 128 MB).
        view = samples[..., 0]
        cache[key] = (view, view) if key == "ci" else view
    if key not in cache:
        value = fn(samples)
        for v in value if isinstance(value, tuple) else (value,):
            v.setflags(write=False)
        cache[key] = value
    return cache[key]


def summary_of(result, statistic) -> dict[str, Any]:
    """:meth:`LatencyResult.summary`: min, max and mean of a statistic over the measured pairs."""
    m = result.statistic(statistic)
    # A ± belongs to the statistic it is shown with: the median's CI, the mean's standard error.
    # (Only the one shown is computed: each is a matrix; a value-only result shows none.)
    err = None if result.value_only else (result.err if statistic == "median" else
                                          result.sem if statistic == "mean" else None)
    cells = ~np.isnan(m)
    # Asymmetric kernels measure both halves: use every measured cell then.
    if result.metadata.get("symmetric", True):
        cells &= np.tril(np.ones_like(m, dtype=bool), -1)
    if not cells.any():
        raise InputError("the result holds no measured pair")
    # Flat indices, not argwhere's (pairs, 2) array and its transposed copy: two matrices at 4,000 CPUs.
    idx = np.flatnonzero(cells)
    del cells
    vals = m.reshape(-1)[idx]
    out: dict[str, Any] = {"statistic": statistic, "pairs": int(idx.size), "mean": float(vals.mean())}
    for key, k in (("min", int(np.argmin(vals))), ("max", int(np.argmax(vals)))):
        i, j = divmod(int(idx[k]), m.shape[1])
        e = np.nan if err is None else err[i, j]
        out[key] = {
            "value": float(vals[k]),
            "err": None if np.isnan(e) or result.value_only else float(e),
            "cpus": (result.cpus[i], result.cpus[j]),
        }
    return out


def records_of(result, statistic) -> list[dict[str, Any]]:
    """:meth:`LatencyResult.records`: one dict per pair with a value, every statistic or one."""
    every = RECORD_STATISTICS
    if statistic and statistic not in every:
        raise InputError(f"unknown statistic {statistic!r}; use one of: {', '.join(map(repr, every))}")
    names = (statistic,) if statistic else every
    mats = {k: result.statistic(k) if k in result.STATISTICS else getattr(result, k) for k in names}
    count, flags = result.count, np.asarray(result.flags)
    out = []
    for i, j in result.pairs():
        rec: dict[str, Any] = {"cpus": (result.cpus[i], result.cpus[j])}
        for k, m in mats.items():
            v = float(m[i, j])
            rec[k] = v if np.isfinite(v) else None
        rec["count"] = int(count[i, j])
        rec["flags"] = int(flags[i, j])
        out.append(rec)
    return out


#: The statistic core-to-core-latency's ``--csv`` layout holds: a file of it without a statistic line
#: is read as means, and corelat writes one unless the values are means.
TRIANGLE_STATISTIC = "mean"

#: The first line of corelat's CSV where the layout does not say the statistic; readers of text
#: (numpy's genfromtxt, pandas with ``comment="#"``) skip it.
STATISTIC_LINE = "# statistic={}"


def held_statistic(result, statistic: str = "median") -> str | None:
    """Which statistic ``result.statistic(statistic)`` holds: ``statistic`` itself for a measured
    result; for a value-only one (one value per pair from a file) the statistic its file records,
    whatever was asked, and None where the file does not say.

    The one answer for every label, comparison and file that names what a matrix's values are."""
    if not getattr(result, "value_only", False):
        return statistic
    return result.metadata.get("statistic") or None


def csv_text(result, statistic, labelled, path=None):
    """``result`` as CSV (:meth:`LatencyResult.to_csv`; also written to ``path`` when given):
    core-to-core-latency's lower triangle, or labelled. The first line names the statistic held,
    except in the triangle of means (byte for byte core-to-core-latency's own layout, which a plain
    CSV reader with no comment rule reads)."""
    if statistic is None:
        statistic = "median" if labelled else TRIANGLE_STATISTIC
    m, cpus = result.statistic(statistic), result.cpus
    held = held_statistic(result, statistic)
    buf = io.StringIO()
    if labelled or held != TRIANGLE_STATISTIC:
        buf.write(STATISTIC_LINE.format(held or "unknown") + "\n")

    def cell(v):
        return "" if np.isnan(v) else repr(float(v))

    if labelled:
        buf.write("cpu," + ",".join(str(c) for c in cpus) + "\n")
        for i, c in enumerate(cpus):
            buf.write(str(c) + "," + ",".join(cell(v) for v in m[i]) + "\n")
    else:
        n = len(cpus)
        for i in range(n):
            row = [cell(m[i, j]) if j < i else "" for j in range(n)]
            buf.write(",".join(row) + "\n")
    text = buf.getvalue()
    if path is not None:
        atomic_write(path, lambda f: f.write(text.encode("utf-8")))
    return text


def value_only(matrix, cpus, symmetric):
    """``(cpus, samples, flags)`` of a value-only result from a square matrix of one value per pair."""
    try:
        m = np.array(matrix, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise InputTypeError(f"a latency matrix must be numbers (ns): {e}") from None
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise InputError(f"a latency matrix must be square, got shape {m.shape}")
    n = m.shape[0]
    if n < 2:
        raise InputError("a latency matrix needs at least 2 CPUs")
    if cpus is None:
        cpus = tuple(range(n))
    if len(cpus) != n:
        raise InputError(f"{len(cpus)} CPU labels for a {n}x{n} matrix")
    np.fill_diagonal(m, np.nan)
    # The rule load() applies to a file, so that what from_matrix makes can be saved and read back.
    problem = _schema.latency_problem(m, 0.0 if symmetric else -_schema.ONEWAY_SLACK_NS, empty_ok=True)
    if problem:
        raise InputError(f"a latency matrix: {problem}")
    flags = np.where(np.isnan(m), 0, PairFlag.MEASURED | PairFlag.VALUE_ONLY)
    if symmetric:
        fill = np.isnan(m) & ~np.isnan(m.T)
        m[fill] = m.T[fill]
        flags[fill] = PairFlag.MIRRORED | PairFlag.VALUE_ONLY
    return cpus, m[:, :, None], flags


def order_of(result, by) -> tuple[Sequence[int], Mapping[str, Sequence[int]], str]:
    """``(order, boundaries, name)`` of :meth:`LatencyResult.ordered`'s ``by``."""
    if hasattr(by, "order") and hasattr(by, "boundaries"):  # a Structure, found by the analysis
        ordering = cast(Ordering, by)
        return ordering.order(), dict(ordering.boundaries), "structure"
    if not isinstance(by, str) and hasattr(by, "__iter__"):
        order = [int(c) for c in by]
        if sorted(order) != sorted(result.cpus):
            raise InputError(f"an order must name each of the result's CPUs {list(result.cpus)} once, "
                             f"got {order}")
        return order, {}, "cpus"
    name = check_order(by, keep=False, allowed=RESULT_ORDERS)
    if name == "os":
        return tuple(sorted(result.cpus)), {}, name
    topo = result.topology
    if topo is None:
        raise InputError("this result carries no topology; order it by 'os', or by its latency "
                         "structure: r.ordered(corelat.structure(r))")
    order, bounds = topo.order(result.cpus)
    return order, cast("dict[str, Any]", bounds), name
