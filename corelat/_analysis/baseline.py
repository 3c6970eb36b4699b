"""``corelat.reference``: what known-good machines look like, per latency class, with tolerances.

The classes are those a fleet report compares (:mod:`corelat._analysis.classes`): from the OS
topology where a result has one, else from the latency structure of the matrix (other tools' files).

From one result, a class's centre is the median of its pairs' values; its tolerance is the larger of
the stated floor and :data:`SPREAD_FACTOR` standard errors of that median (the spread of the class's
pairs on the machine, over the square root of their number). From several results of alike
machines, the centre is the median of the machines' class medians and the tolerance the larger of
the floor and :data:`SPREAD_FACTOR` robust standard deviations of those medians across the machines
(``scipy.stats.median_abs_deviation(scale="normal")`` of their logarithms). The floor keeps one quiet
machine, or a group of identical copies, from making a band thinner than machines of one model
differ by.
"""

from __future__ import annotations

import datetime
import math
import os
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from corelat._analysis import classes as _classes
from corelat._core import stats as _stats
from corelat._core.errors import InputError, InputTypeError
from corelat._core.protocol import thaw
from corelat._results.fleet import MAD_THRESHOLD
from corelat._results.latency import LatencyResult
from corelat._results.load import load
from corelat._results.matrix import PairFlag
from corelat._results.reference import Reference
from corelat._version import __version__

#: The least tolerance of a class, ±5 %: machines of one model differ by about 2 % overall (clock,
#: uncore and firmware differences; ``corelat._fleet.synth.NODE_SIGMA``), so 5 % is some 2.5 of
#: those standard deviations, while the issue's faults (a slowed class, +25 %) stay five floors out.
DEFAULT_FLOOR = 0.05

#: How many robust standard deviations (or standard errors) a tolerance spans: the fleet report's
#: outlier rule (``MAD_THRESHOLD``), so that a reference and a fleet call the same node off.
SPREAD_FACTOR = MAD_THRESHOLD

#: The standard error of a median of n normal values is this × SD / sqrt(n) (sqrt(pi / 2)).
MEDIAN_SE = math.sqrt(math.pi / 2)


def as_results(items: Any, what: str = "reference()") -> list[tuple[LatencyResult, str | None]]:
    """(result, file or None) for a result, a path or a sequence of them; InputError for other kinds."""
    if isinstance(items, (LatencyResult, str, os.PathLike)):
        items = [items]
    try:
        items = list(items)
    except TypeError:
        raise InputTypeError(f"{what} takes latency results or paths to result files, not "
                             f"{type(items).__name__}") from None
    out = []
    for x in items:
        path = os.fspath(x) if isinstance(x, (str, os.PathLike)) else None
        r = load(path) if path is not None else x
        if not isinstance(r, LatencyResult):
            where = f"{path} holds" if path else "got"
            raise InputError(f"{what}: {where} a {type(r).__name__}, not a latency result (a matrix of "
                             "one machine: a corelat .npz, a core-to-core-latency CSV, a c2clat file)")
        out.append((r, path))
    if not out:
        raise InputError(f"{what}: give at least one result")
    return out


def classify(result: LatencyResult, cpus: Sequence[int]) -> tuple[np.ndarray, tuple[str, ...], str]:
    """(codes, class names, source) of ``result``'s pairs, positions as ``cpus``: its topology's
    classes where it has a topology that places every CPU, else its matrix's structure."""
    topo = result.metadata.get("topology")
    got = _classes.from_topology(thaw(topo).get("cpus", []), list(cpus)) if topo else None
    if got is not None:
        return got[0], got[1], "topology"
    codes, names = _classes.from_structure(aligned(result, cpus), list(cpus))
    return codes, names, "structure"


def aligned(result: LatencyResult, cpus: Sequence[int]) -> np.ndarray:
    """``result``'s pair values at the positions of ``cpus`` (NaN for a CPU it lacks and for the pairs
    it only estimated: a sampled sweep's copies of a measured pair are not measurements)."""
    pos = {c: i for i, c in enumerate(result.cpus)}
    idx = np.array([pos.get(c, -1) for c in cpus])
    have = idx >= 0
    m = np.asarray(result.median, dtype=np.float64)
    estimated = (np.asarray(result.flags) & PairFlag.ESTIMATED) != 0
    m = np.where(estimated, np.nan, m)
    n = len(cpus)
    out = np.full((n, n), np.nan)
    sel = np.flatnonzero(have)
    out[np.ix_(sel, sel)] = m[np.ix_(idx[sel], idx[sel])]
    np.fill_diagonal(out, np.nan)
    return out


def class_figures(values: np.ndarray, codes: np.ndarray, k: int,
                  symmetric: bool) -> tuple[float, float, int]:
    """(median ns, robust relative spread, pairs) of class ``k``'s measured pairs in ``values``."""
    v = values[codes == k]
    v = v[np.isfinite(v) & (v > 0)]
    if not v.size:
        return math.nan, math.nan, 0
    spread = _stats.median_sd(np.log(v))[1] if v.size > 1 else 0.0
    return float(np.median(v)), spread, int(math.ceil(v.size / 2)) if symmetric else int(v.size)


def _model(r: LatencyResult) -> str | None:
    m = r.metadata.get("cpu_model")
    return " ".join(str(m).split()) or None if m else None


def _label(r: LatencyResult, path: str | None) -> str:
    if path:
        return os.path.basename(path)
    return str(r.metadata.get("hostname") or r.name or "result")


def check_alike(results: list[tuple[LatencyResult, str | None]]) -> None:
    """InputError unless every result is of one machine shape: the same CPUs, CPU model, topology,
    kernel, wherever the results say."""
    first, fpath = results[0]
    for r, path in results[1:]:
        why = None
        if set(r.cpus) != set(first.cpus):
            why = f"{len(r.cpus)} CPUs" if len(r.cpus) != len(first.cpus) else "other CPU ids"
            why = (f"{_label(r, path)} has {why}, {_label(first, fpath)} {len(first.cpus)} CPUs")
        elif _model(r) and _model(first) and _model(r) != _model(first):
            why = f"{_label(r, path)} is a {_model(r)}, {_label(first, fpath)} a {_model(first)}"
        elif r.kernel != first.kernel and "unknown" not in (r.kernel, first.kernel):
            why = (f"{_label(r, path)} was measured with {r.kernel}, {_label(first, fpath)} with "
                   f"{first.kernel}")
        else:
            a, b = r.metadata.get("topology_summary"), first.metadata.get("topology_summary")
            if a and b and a != b:
                why = f"{_label(r, path)} is a {a}, {_label(first, fpath)} a {b}"
        if why:
            raise InputError(f"a reference is made of alike machines, and these are not: {why} (make one "
                             "reference per kind of machine)")


def _check_floor(floor: Any) -> float:
    if isinstance(floor, bool) or not isinstance(floor, (int, float)) or not 0 < floor < 1:
        raise InputError(f"floor must be a fraction above 0 and below 1 (0.05 is ±5 %), not {floor!r}")
    return float(floor)


def reference(results: Any, *, floor: float = DEFAULT_FLOOR, name: str | None = None) -> Reference:
    """A reference from one result or from several results of alike machines.

    Parameters
    ----------
    results : LatencyResult, path, or a sequence of them
        Results of known-good machines of one kind (a corelat ``.npz``, a core-to-core-latency
        CSV or a c2clat file, or results in memory).
    floor : float
        The least tolerance of every class, a fraction (default 0.05, ±5 %): one quiet machine must
        not make a band thinner than machines of one model differ by.
    name : str, optional
        What verdicts call the reference (default: the CPU model, else the first result's name).

    Returns
    -------
    Reference

    Raises
    ------
    InputError
        For results of different machines (CPU count or ids, CPU model, topology, kernel), a file
        that is not a latency result, or a floor outside (0, 1).

    Examples
    --------
    >>> import corelat
    >>> ref = corelat.reference(corelat.example_files()[0], name="vm")
    >>> ref.name, len(ref.cpus), ref.floor
    ('vm', 2, 0.05)
    """
    floor = _check_floor(floor)
    got = as_results(results)
    check_alike(got)
    cpus = sorted(got[0][0].cpus)
    values = [aligned(r, cpus) for r, _ in got]
    with_topology = next((r for r, _ in got if r.metadata.get("topology")), None)
    if with_topology is not None:
        codes, names, source = classify(with_topology, cpus)
    else:
        codes, names = _classes.from_structure(_median_of(values), cpus)
        source = "structure"
    kept, rows = [], []
    for k, cls in enumerate(names):
        figs = [class_figures(v, codes, k, bool(r.metadata.get("symmetric", True)))
                for v, (r, _) in zip(values, got)]
        figs = [f for f in figs if math.isfinite(f[0])]
        if not figs:
            continue
        kept.append(k)
        rows.append((cls, *_centre_and_tolerance(figs, floor)))
    if not rows:
        raise InputError("reference(): no class of pairs has a measured value")
    remap = np.full(len(names) + 1, -1, dtype=np.int8)
    for new, old in enumerate(kept):
        remap[old] = new
    codes = remap[np.where(codes < 0, len(names), codes)]
    first = got[0][0]
    md = {"cpu_model": _model(first), "cpu_count": len(cpus), "kernel": first.kernel,
          "topology_summary": first.metadata.get("topology_summary"), "class_source": source,
          "machines": len(got), "floor": floor, "statistic": first.metadata.get("statistic") or "median",
          "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
          "corelat_version": __version__,
          "sources": [{"name": r.name, "file": path, "hostname": r.metadata.get("hostname"),
                       "date": r.metadata.get("date")} for r, path in got]}
    if with_topology is not None:
        md["topology"] = thaw(with_topology.metadata["topology"])
    if name is None:
        name = _model(first) or first.name or "reference"
    return Reference(cpus, [r[0] for r in rows], codes, [r[1] for r in rows], [r[2] for r in rows],
                     [r[3] for r in rows], [r[4] for r in rows], metadata=md, name=name)


def _median_of(values: list[np.ndarray]) -> np.ndarray:
    """The pairwise median of the machines' matrices (the one matrix for one machine)."""
    if len(values) == 1:
        return values[0]
    with warnings.catch_warnings():  # the diagonal, and pairs no machine measured, are NaN for all
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmedian(np.stack(values), axis=0)


def _centre_and_tolerance(figs: list[tuple[float, float, int]],
                          floor: float) -> tuple[float, float, float, int]:
    """(centre, tolerance, spread, pairs) of a class from each machine's (median, spread, pairs)."""
    medians = np.array([f[0] for f in figs])
    spread = float(np.median([f[1] for f in figs]))
    pairs = int(np.median([f[2] for f in figs]))
    centre = float(np.median(medians))
    if len(figs) == 1:
        scale = MEDIAN_SE * spread / math.sqrt(max(pairs, 1))
    else:
        scale = _stats.median_sd(np.log(medians))[1]
    return centre, max(floor, SPREAD_FACTOR * scale), spread, pairs
