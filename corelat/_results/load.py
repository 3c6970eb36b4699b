"""``corelat.load``: one entry point for every file corelat reads.

corelat's own files (``.npz`` containers, see :mod:`corelat._core.npz`) name the kind of result they hold
and are read by that result's class; anything else is tried as another tool's text matrix
(:mod:`corelat._results.formats`).
"""

from __future__ import annotations

import os
from typing import Any

from corelat._core import files as _files
from corelat._core import npz as _npz
from corelat._core.errors import InputError, InputTypeError
from corelat._core.types import Path
from corelat._results import formats as _formats
from corelat._results.check import CheckReport
from corelat._results.fleet import FleetResult, load_fleet
from corelat._results.latency import LatencyResult
from corelat._results.locks import LockResult
from corelat._results.placement import PlacementResult
from corelat._results.reference import Reference
from corelat._results.smt import SMTResult
from corelat._results.verdict import Verdict
from corelat._system.topology import Topology

#: kind (the ``kind`` field of a file's header) -> the class that reads it.
KINDS = {cls._KIND: cls for cls in (LatencyResult, SMTResult, LockResult, FleetResult, Topology, CheckReport,
                                    PlacementResult, Reference, Verdict)}


def _starts_like_json(path: str) -> bool:
    """True when the file's first non-blank byte opens a JSON object (no text matrix does)."""
    try:
        with _files.open_regular(path, _files.MAX_TEXT_BYTES) as f:
            head = f.read(4096)
    except OSError:
        return False  # the text reader says what is wrong with the file
    return head.lstrip()[:1] == b"{"


def load(path: Path) -> Any:
    """Read a result file: any corelat ``.npz`` file, or another tool's text matrix.

    corelat files give back the kind of result that was saved, a fleet report saved as JSON
    (``fleet.json``) its :class:`FleetResult`. Text formats understood:
    core-to-core-latency's ``--csv`` output (square lower triangle, no labels), c2clat's table and
    plot output, and a labelled CSV as written by :meth:`LatencyResult.to_csv` (``labelled=True``);
    they give a value-only :class:`LatencyResult`.

    Parameters
    ----------
    path : str or os.PathLike
        The file to read.

    Returns
    -------
    LatencyResult, SMTResult, LockResult, FleetResult, Topology, CheckReport, PlacementResult, Reference,
    Verdict
        The kind of result the file holds.

    Raises
    ------
    InputError
        For a missing, unreadable or corrupt file.

    Examples
    --------
    >>> import corelat
    >>> r = corelat.load(corelat.example_files()[0])
    >>> type(r).__name__
    'LatencyResult'
    """
    try:
        path = os.fspath(path)
    except TypeError:
        raise InputTypeError(f"load() reads a file: give a path, not {type(path).__name__}") from None
    if isinstance(path, bytes):  # a path as bytes names the same file; every message wants text
        path = os.fsdecode(path)
    if not _npz.is_npz(path):
        if path.lower().endswith(".json") or _starts_like_json(path):
            return load_fleet(path)  # the one kind saved as JSON: a fleet report (fleet.json)
        return _formats.load_text(path)
    header, arrays = _npz.read(path)
    cls = KINDS.get(header["kind"])
    if cls is None:
        raise InputError(f"{path}: holds a {header['kind']!r} result, which this corelat cannot read; "
                         "upgrade corelat")
    return cls._from_file(header, arrays, path)  # the checks of schema.HEADERS, as Kind.load runs them
