"""Reports to share: one offline HTML page or a PDF per result, comparison or fleet.

:func:`write_report` builds the report's sections (:mod:`corelat._report.machine` for one machine,
:mod:`corelat._report.many` for comparisons and fleets) and renders them as HTML
(:mod:`corelat._report.html`) or PDF (:mod:`corelat._report.pdf`) by the path's suffix. It is the
layer between the command line and :mod:`corelat.plot`; matplotlib (the ``report`` extra) is
imported only when a report is written.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Sequence
from typing import Literal, Union

import numpy as np

from corelat._analysis.compare import Comparison
from corelat._core.errors import InputError, InputTypeError
from corelat._core.files import atomic_write, write_target
from corelat._core.types import Path, Statistic
from corelat._fleet.nodes import fleet as _fleet
from corelat._report import figures, html, machine, many, pdf
from corelat._results.fleet import FleetResult
from corelat._results.latency import LatencyResult
from corelat._results.load import load
from corelat._results.locks import LockResult
from corelat._results.placement import PlacementResult
from corelat._results.smt import SMTResult

#: What a report is made of: a result, or a path to a result file, a fleet.json or a fleet's folder.
Reportable = Union[LatencyResult, PlacementResult, SMTResult, LockResult, FleetResult, Path]

#: Suffix -> format.
FORMATS = {".html": "html", ".htm": "html", ".pdf": "pdf"}


def report_format(path: Path) -> str:
    """``"html"`` or ``"pdf"`` by the path's suffix; InputError for any other suffix."""
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    if suffix not in FORMATS:
        raise InputError(f"{os.fspath(path)}: a report is written as .html or .pdf, "
                         f"not {suffix or 'no suffix'!r}")
    return FORMATS[suffix]


def _one(item):
    """A path (a folder is a fleet) or a result, as a result."""
    if isinstance(item, (str, os.PathLike)):
        return _fleet(item) if os.path.isdir(item) else load(item)
    return item


def build(result_or_results, statistic="median"):
    """The :class:`~corelat._report.model.Report` of a result, a list of results (compared), or a
    :class:`~corelat.Comparison`."""
    item = result_or_results
    if isinstance(item, Comparison):
        item = list(item.results)
    if isinstance(item, Sequence) and not isinstance(item, (str, bytes)):
        items = [_one(x) for x in item]
        for x in items:
            check_statistic_held(x, statistic)
        if len(items) != 1:
            return many.comparison(items, statistic)
        item = items[0]
    item = _one(item)
    check_statistic_held(item, statistic)
    return _one_kind(item, statistic)


def _one_kind(item, statistic):
    if isinstance(item, LatencyResult):
        return machine.latency(item, statistic)
    if isinstance(item, PlacementResult):
        return machine.placement(item, statistic)
    if isinstance(item, SMTResult):
        return machine.smt(item, statistic)
    if isinstance(item, LockResult):
        return machine.locks(item)
    if isinstance(item, FleetResult):
        return many.fleet(item)
    raise InputTypeError(f"no report for {type(item).__name__}: give a result, a list of results, a result "
                         "file or a fleet folder")


def _figures(rep):
    return [b for s in rep.sections for b in s.blocks if isinstance(b, figures.Figure)]


def write_report(result_or_results, path: Path, *, statistic: Statistic = "median",
                 paper: str = "a4") -> None:
    """Write the report of a result (or of several, compared; or of a fleet) to ``path``.

    HTML for ``.html``/``.htm``, PDF for ``.pdf``; written atomically (a failed write leaves
    ``path`` as it was). ``paper`` (``"a4"`` or ``"letter"``) sizes the PDF's pages.
    """
    kind = report_format(path)
    if paper not in pdf.PAPERS:
        raise InputError(f"unknown paper {paper!r}: use 'a4' or 'letter'")
    write_target(path)  # a folder or device as target fails before the figures are drawn
    plt = figures.pyplot()
    rep = build(result_or_results, statistic)
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    try:
        if kind == "html":
            def write(f):  # piece by piece: a 4,000-CPU page's CSV is never held whole
                for part in html.render_parts(rep, date):
                    f.write(part.encode("utf-8"))

            atomic_write(path, write)
        else:
            backend = figures.backend_pdf()
            atomic_write(path, lambda f: pdf.render(rep, f, plt, backend, date, paper))
    finally:
        figures.close(_figures(rep))


def report(result_or_results: Reportable | Sequence[Reportable] | Comparison, path: Path, *,
           statistic: Statistic = "median", paper: Literal["a4", "letter"] = "a4") -> None:
    """Write a report to share: one offline HTML page, or a PDF, by the path's suffix.

    The page holds the headline, the heatmap (each cell's value on hover), the distribution, the
    structure reading, the topology, the warnings and settings recorded with the result, how it
    was measured, the machine's metadata and the matrices (median, min, CI) as a CSV download;
    a comparison shows the machines on one colour scale with the per-class table and ratios; a
    fleet its verdict first, its figures, the outliers' settings and every node in a filterable
    table. Nothing in it is loaded from the network.

    Parameters
    ----------
    result_or_results : result, path, or list of them
        A :class:`LatencyResult`, :class:`PlacementResult`, :class:`SMTResult`,
        :class:`LockResult` or :class:`FleetResult`; a path to a result file, a ``fleet.json``
        or a folder of node results (a fleet); several results or paths (or a
        :class:`Comparison`) are compared.
    path : str or os.PathLike
        Where to write it: ``.html`` (or ``.htm``) or ``.pdf``. Written atomically.
    statistic : str
        The per-pair statistic shown (``"median"``, ``"mean"``, ``"min"``, ``"max"``, ``"std"``).
    paper : {"a4", "letter"}
        The PDF's page size.

    Raises
    ------
    InputError
        For another suffix, an unknown statistic or paper, a statistic the result does not hold,
        or nothing to report.
    MissingDependencyError
        Where matplotlib is not installed (the message says how to install ``corelat[report]``).
    SaveError
        When the file cannot be written (the old file, if any, is left as it was).

    Examples
    --------
    >>> import corelat
    >>> corelat.report(corelat.load(corelat.example_files()[0]), "vm.html")  # doctest: +SKIP
    """
    write_report(result_or_results, path, statistic=statistic, paper=paper)


def check_statistic_held(result, statistic: Statistic) -> None:
    """InputError when ``result`` holds no value of ``statistic`` where it holds values of the median
    (a file of another tool keeps one value per pair: no spread, so no ``std``)."""
    for one in getattr(result, "results", None) or [result]:
        if not isinstance(one, LatencyResult):
            continue
        if not np.isfinite(one.statistic(statistic)).any() and np.isfinite(one.median).any():
            what = (f"one value per pair ({one.metadata.get('source') or 'another tool'}), no samples"
                    if one.value_only else "no samples for it")
            raise InputError(f"{one.name or 'the result'}: the statistic {statistic!r} is not in the file: "
                             f"it holds {what}; use --statistic median (or mean, min, max)")
