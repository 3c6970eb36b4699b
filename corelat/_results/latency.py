"""The latency result: an immutable value holding raw samples, CPUs, parameters and metadata.

Statistics are derived from the samples on demand (and cached), so a result loaded from a file
answers exactly like the one that was measured.
"""
from __future__ import annotations

import functools
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from corelat._core import stats as _stats
from corelat._core import text as _text
from corelat._core.errors import InputError, InputTypeError
from corelat._core.protocol import (
    SavedResult,
    array_from_json,
    deprecated,
    freeze,
    from_file,
    frozen_array,
    jsonable,
    keyword_options,
    thaw,
)
from corelat._core.types import STATISTICS, Ordering, Path, ResultOrder, Statistic
from corelat._results import matrix as _matrix
from corelat._results import schema as _schema
from corelat._results.matrix import PairFlag
from corelat._system.topology import Topology
from corelat._system.validate import check_statistic

if TYPE_CHECKING:  # annotations only: _topology imports this module's callers
    import numpy.typing as npt

MEDIAN_MEMBER = _schema.MEDIAN_MEMBER
__all__ = ["MEDIAN_MEMBER", "LatencyResult", "PairFlag", "thaw"]


def _seal(a):
    """Make ``a`` and the arrays it views read-only (so that :func:`frozen_array` keeps it)."""
    while isinstance(a, np.ndarray):
        a.setflags(write=False)
        a = a.base


@dataclass(frozen=True, eq=False, repr=False)
class LatencyResult(SavedResult):
    """Core-to-core latency of a set of CPUs: an immutable value holding the raw samples.

    Made by :func:`corelat.measure`, :func:`corelat.load` or :meth:`from_matrix`. Statistics
    (:attr:`median`, :attr:`mean`, ...) are ``(n, n)`` read-only arrays derived from the samples on
    demand; row ``i``, column ``j`` is the pair ``(cpus[i], cpus[j])``.

    Attributes
    ----------
    cpus : tuple of int
        OS ids of the CPUs, in matrix order.
    kernel : str
        The ping-pong kernel that measured it (``"cas"``, ``"rw"``, ``"oneway"``, ...), or the
        name of another tool for imported files.
    samples : numpy.ndarray
        float64 ``(n, n, k)`` one-way latencies in ns (round-trip time / 2 for ping-pong
        kernels). NaN where nothing was measured (the diagonal, dropped samples, padding).
    metadata : Mapping
        Read-only mapping of system information and parameters.
    name : str
        A short label (host name, file name) used when comparing results.
    flags : numpy.ndarray
        ``(n, n)`` uint32 array of :class:`PairFlag` bits.
    extras : Mapping
        Named extra arrays (e.g. first attempts of re-tested pairs); saved with the result.

    Examples
    --------
    >>> import corelat
    >>> r = corelat.load(corelat.example_files()[0])
    >>> r.cpus, r.kernel, r.samples.shape
    ((0, 1), 'cas', (2, 2, 300))
    >>> bool(r.median[1, 0] > 0)
    True
    """

    cpus: tuple
    kernel: str
    samples: np.ndarray
    metadata: Mapping[str, Any] = field(default_factory=dict)
    name: str = ""
    flags: np.ndarray | None = None
    extras: Mapping[str, np.ndarray] = field(default_factory=dict)

    _KIND = "latency"
    _FIELDS = ("cpus", "kernel", "samples", "metadata", "name", "flags", "extras")
    STATISTICS = STATISTICS

    def __post_init__(self):
        try:
            cpus = tuple(int(c) for c in self.cpus)
            samples = np.asarray(self.samples, dtype=np.float64)
        except (TypeError, ValueError) as e:
            raise InputTypeError(f"cpus must be CPU ids and samples numbers (ns): {e}") from None
        n = len(cpus)
        if samples.ndim != 3 or samples.shape[:2] != (n, n):
            raise InputError(f"samples must have shape ({n}, {n}, k), got {samples.shape}")
        flags = self.flags
        if flags is None:
            has = ~np.all(np.isnan(samples), axis=-1)
            flags = np.where(has, int(PairFlag.MEASURED), 0)
        flags = np.asarray(flags)
        if flags.shape != (n, n):
            raise InputError(f"flags must have shape ({n}, {n}), got {flags.shape}")
        set_ = functools.partial(object.__setattr__, self)
        set_("cpus", cpus)
        set_("kernel", str(self.kernel))
        set_("samples", frozen_array(samples))
        set_("flags", frozen_array(flags, np.uint32))
        set_("metadata", freeze(thaw(self.metadata)))
        set_("extras", types.MappingProxyType({k: frozen_array(v) for k, v in self.extras.items()}))
        set_("name", str(self.name))

    # -- derived statistics (n, n) -------------------------------------------------------------
    def __cached(self, key, fn):
        return _matrix.cached_statistic(self.__dict__.setdefault("_cache", {}), self.samples, key, fn)

    @property
    def median(self) -> npt.NDArray[np.float64]:
        """Median one-way latency per pair in ns."""
        return self.__cached("median", _stats.median)

    @property
    def mean(self) -> npt.NDArray[np.float64]:
        """Mean one-way latency per pair in ns."""
        return self.__cached("mean", _stats.mean)

    @property
    def min(self) -> npt.NDArray[np.float64]:
        """Minimum one-way latency per pair in ns."""
        return self.__cached("min", _stats.minimum)

    @property
    def max(self) -> npt.NDArray[np.float64]:
        """Maximum one-way latency per pair in ns."""
        return self.__cached("max", _stats.maximum)

    @property
    def std(self) -> npt.NDArray[np.float64]:
        """Sample standard deviation per pair in ns."""
        return self.__cached("std", _stats.std)

    @property
    def count(self) -> npt.NDArray[np.int_]:
        """Number of valid samples per pair."""
        return self.__cached("count", _stats.count)

    @property
    def ci(self) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """(low, high): 95 % distribution-free confidence interval of the median per pair."""
        return self.__cached("ci", _stats.median_ci)

    @property
    def err(self) -> npt.NDArray[np.float64]:
        """Half-width of the median's confidence interval per pair (the ``±`` of printed cells)."""
        return self.__cached("err", _stats.median_err)

    @property
    def sem(self) -> npt.NDArray[np.float64]:
        """Standard error of the mean per pair (core-to-core-latency's ``±``)."""
        return self.__cached("sem", _stats.mean_sem)

    @property
    def n(self) -> int:
        """Number of CPUs."""
        return len(self.cpus)

    @property
    def value_only(self) -> bool:
        """True when the result holds one value per pair (imported), not raw samples."""
        return bool(self.metadata.get("value_only", False))

    def statistic(self, name: Statistic = "median") -> npt.NDArray[np.float64]:
        """The ``(n, n)`` matrix of a statistic by name.

        Parameters
        ----------
        name : str
            One of :attr:`STATISTICS`: ``"median"``, ``"mean"``, ``"min"``, ``"max"``, ``"std"``.

        Returns
        -------
        numpy.ndarray
            Read-only ``(n, n)`` float64 matrix in ns, NaN where the pair has no value.

        Raises
        ------
        InputError
            For an unknown statistic.

        Examples
        --------
        >>> import corelat
        >>> r = corelat.load(corelat.example_files()[0])
        >>> r.statistic("min").shape
        (2, 2)
        """
        return getattr(self, check_statistic(name))

    def pairs(self) -> list[tuple[int, int]]:
        """Index pairs ``(i, j)`` (positions into :attr:`cpus`) that have a value.

        Returns
        -------
        list of tuple
            Off-diagonal pairs ``(i, j)``, row by row.

        Examples
        --------
        >>> import corelat
        >>> corelat.load(corelat.example_files()[0]).pairs()
        [(0, 1), (1, 0)]
        """
        has = ~np.isnan(self.median)
        return [(i, j) for i in range(self.n) for j in range(self.n) if i != j and has[i, j]]

    # -- summaries -------------------------------------------------------------------------------
    @keyword_options("statistic")
    def summary(self, *, statistic: Statistic = "median") -> dict[str, Any]:
        """Min, max and mean latency over pairs, like core-to-core-latency prints.

        Parameters
        ----------
        statistic : str
            The per-pair statistic summarised (see :attr:`STATISTICS`).

        Returns
        -------
        dict
            ``min`` and ``max`` as ``{"value", "err", "cpus"}`` (``err``: half the median's 95 %
            CI, the mean's standard error, None for other statistics; ``cpus``: the OS id pair,
            larger index first as in the printed lower triangle), ``mean`` (the mean of the
            per-pair values), ``statistic`` and ``pairs`` (how many pairs have a value).

        Raises
        ------
        InputError
            For an unknown statistic, or a result without any measured pair.

        Examples
        --------
        >>> import corelat
        >>> s = corelat.load(corelat.example_files()[0]).summary()
        >>> s["pairs"], s["min"]["cpus"]
        (1, (1, 0))
        """
        return _matrix.summary_of(self, statistic)

    # -- reshaping -------------------------------------------------------------------------------
    def _take(self, indices):
        """A new result restricted to, or reordered by, positions into :attr:`cpus`."""
        idx = np.asarray(indices, dtype=np.intp)
        if idx.size and not (-self.n <= idx.min() and idx.max() < self.n):
            raise InputError(f"indices must be positions 0 to {self.n - 1} of this result's CPUs")
        ix = np.ix_(idx, idx)
        return LatencyResult(
            cpus=tuple(self.cpus[i] for i in idx),
            kernel=self.kernel,
            samples=self.samples[ix],
            metadata=thaw(self.metadata),
            name=self.name,
            flags=cast("np.ndarray", self.flags)[ix],
            extras={k: v[ix] if v.shape[:2] == (self.n, self.n) else v for k, v in self.extras.items()},
        )

    def _with_cpus(self, cpus):
        pos = {c: i for i, c in enumerate(self.cpus)}
        missing = [c for c in cpus if c not in pos]
        if missing:
            raise InputError(f"CPUs {missing} are not in this result")
        return self._take([pos[c] for c in cpus])

    @deprecated("LatencyResult.take(indices) is deprecated: use ordered(cpus), which takes CPU ids "
                "(r.ordered([r.cpus[i] for i in indices]))")
    def take(self, indices: Sequence[int]) -> LatencyResult:
        """Deprecated (use :meth:`ordered`, which takes CPU ids): a new result restricted to, or
        reordered by, positions into :attr:`cpus`.

        Parameters
        ----------
        indices : sequence of int
            Positions (not CPU ids) of the CPUs to keep, in the new order.

        Returns
        -------
        LatencyResult
        """
        return self._take(indices)

    @deprecated("LatencyResult.with_cpus_order(cpus) is deprecated: use ordered(cpus)")
    def with_cpus_order(self, cpus: Sequence[int]) -> LatencyResult:
        """Deprecated (use :meth:`ordered`): a new result with its CPUs in the given order.

        Parameters
        ----------
        cpus : sequence of int
            CPU ids: a permutation or a subset of :attr:`cpus`.

        Returns
        -------
        LatencyResult
        """
        return self._with_cpus(cpus)

    def ordered(self, by: ResultOrder | Sequence[int] | Ordering) -> LatencyResult:
        """A new result with the CPUs reordered: the one way to reorder a result.

        Parameters
        ----------
        by : {"os", "topology"}, a sequence of CPU ids, or a Structure
            ``"os"`` sorts by CPU id; ``"topology"`` by package, NUMA node, L3, core and thread,
            using the topology the result was measured on (``metadata["topology"]``); a list puts
            the CPUs in that order (each of the result's CPUs once); a :class:`~corelat.Structure`
            (``r.ordered(corelat.structure(r))``) by the latency groups it found in the matrix.
            The group boundaries (indices where a new group starts) are in :attr:`boundaries`.

        Returns
        -------
        LatencyResult

        Raises
        ------
        InputError
            For an unknown ``by`` (``"structure"`` included: the result does not analyse itself), a
            list that is not a permutation of the result's CPUs, or ``"topology"`` on a result that
            carries no topology.

        Examples
        --------
        >>> import corelat
        >>> corelat.load(corelat.example_files()[0]).ordered("os").cpus
        (0, 1)
        """
        order, bounds, name = _matrix.order_of(self, by)
        out = self if tuple(order) == self.cpus else self._with_cpus(order)
        md = thaw(out.metadata)
        md["order"] = {"by": name, "boundaries": {k: list(map(int, v)) for k, v in bounds.items()}}
        return LatencyResult(cpus=out.cpus, kernel=out.kernel, samples=out.samples, metadata=md,
                             name=out.name, flags=out.flags, extras=dict(out.extras))

    @property
    def topology(self) -> Topology | None:
        """The :class:`~corelat._system.topology.Topology` the result was measured on, or None."""
        d = self.metadata.get("topology")
        if not d:
            return None
        return Topology.from_dict(thaw(d))

    @property
    def boundaries(self) -> dict[str, tuple[int, ...]]:
        """Group boundaries of the current order (what :meth:`ordered` found): level name (``"package"``,
        ``"level0"``, ...) → the positions where a new group starts (0 omitted), as
        :attr:`Structure.boundaries <corelat.Structure.boundaries>` gives them; ``{}`` unordered."""
        order = self.metadata.get("order") or {}
        return {k: tuple(v) for k, v in (order.get("boundaries") or {}).items()}

    # -- output ----------------------------------------------------------------------------------
    def to_csv(self, path: Path | None = None, *, statistic: Statistic | None = None,
               labelled: bool = False) -> str:
        """The matrix as CSV text, also written to ``path`` when given.

        Parameters
        ----------
        path : str or os.PathLike, optional
            A file to write (atomically).
        statistic : str, optional
            The per-pair statistic written (:attr:`STATISTICS`; default: the layout's, mean or median).
            A first line ``# statistic=NAME`` names it, except in core-to-core-latency's own means.
        labelled : bool
            False: core-to-core-latency's ``--csv`` layout, a square lower triangle of per-pair
            values, no header, empty cells on and above the diagonal. True (median): the square
            matrix with CPU ids as header row and first column (empty where not measured).

        Returns
        -------
        str
            The CSV text.

        Examples
        --------
        >>> import corelat
        >>> print(corelat.load(corelat.example_files()[0]).to_csv(statistic="median"))  # doctest: +ELLIPSIS
        # statistic=median
        ,
        106.6...,
        <BLANKLINE>
        """
        return _matrix.csv_text(self, statistic, labelled, path)

    # -- text and records ------------------------------------------------------------------------
    @keyword_options("statistic")
    def records(self, *, statistic: str | None = None) -> list[dict[str, Any]]:
        """One dict per pair with a value, in the order of :meth:`pairs`.

        Parameters
        ----------
        statistic : str, optional
            Keep only this statistic (default: all of them).

        Returns
        -------
        list of dict
            Keys ``cpus`` (OS ids, row CPU first), every statistic (``median``, ``err``,
            ``mean``, ``min``, ``max``, ``std``; ns, None where unknown), ``count`` (samples) and
            ``flags`` (:class:`PairFlag` bits).

        Examples
        --------
        >>> import corelat
        >>> rec = corelat.load(corelat.example_files()[0]).records()[0]
        >>> rec["cpus"], rec["count"]
        ((0, 1), 300)
        """
        return _matrix.records_of(self, statistic)

    @keyword_options("statistic")
    def table(self, *, statistic: Statistic = "median") -> str:
        """The matrix as text (row CPU ids on the left, column ids on top), then min/max/mean.

        Parameters
        ----------
        statistic : str
            The per-pair statistic shown (see :attr:`STATISTICS`).

        Returns
        -------
        str
            What ``str(result)`` gives for the median.

        Examples
        --------
        >>> import corelat
        >>> print(corelat.load(corelat.example_files()[0]).table())  # doctest: +ELLIPSIS
                     0
         0
         1 106.66±0.08
        ...
        """
        text = _text.matrix(self, statistic)
        if np.isnan(self.statistic(statistic)).all():
            return text
        return text + "\n\n" + _text.latency_summary(self, statistic)

    def describe(self) -> str:
        """The result in words: the median matrix and its min/max/mean (what ``print(result)`` shows).

        Returns
        -------
        str
            ``table(statistic="median")``.
        """
        return self.table()

    @keyword_options("statistic")
    def to_dict(self, *, statistic: Statistic | None = None, arrays: bool = True) -> dict[str, Any]:
        """The result as plain, strict-JSON data (NaN becomes None); :meth:`from_dict` reads it back.

        Parameters
        ----------
        statistic : str, optional
            Keep only this statistic in the records (default: all of them).
        arrays : bool
            Include the raw ``samples``, ``flags`` and ``extras`` (what :meth:`from_dict` needs);
            False leaves the figures only.

        Returns
        -------
        dict
            ``kind``, ``name``, ``kernel``, ``cpus``, ``summary``, ``records`` (one per pair),
            ``warnings``, ``notes``, ``metadata`` and, with ``arrays``, ``samples`` (nested
            lists, ``(n, n, k)``), ``flags`` and ``extras`` (name -> ``{"dtype", "values"}``).

        Examples
        --------
        >>> import json, corelat
        >>> r = corelat.load(corelat.example_files()[0])
        >>> d = json.loads(json.dumps(r.to_dict()))
        >>> d["kind"], corelat.LatencyResult.from_dict(d) == r
        ('latency', True)
        """
        has = not np.isnan(self.median).all()
        d: dict[str, Any] = {
            "kind": self._KIND,
            "name": self.name,
            "kernel": self.kernel,
            "cpus": list(self.cpus),
            "summary": self.summary(statistic=statistic or "median") if has else None,
            "records": self.records(statistic=statistic),
            "warnings": list(self.warnings),
            "notes": list(self.notes),
            "metadata": self.metadata,
        }
        if arrays:
            d["samples"] = self.samples
            d["flags"] = self.flags
            d["extras"] = {k: {"dtype": v.dtype.str, "values": v} for k, v in self.extras.items()}
        return jsonable(d)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> LatencyResult:
        """A result from what :meth:`to_dict` gave (with ``arrays``), after a trip through JSON or not.

        Parameters
        ----------
        d : dict
            ``to_dict()`` output.

        Returns
        -------
        LatencyResult

        Raises
        ------
        InputError
            When ``d`` is not a latency result's dict, or lacks the arrays.
        """
        if not isinstance(d, Mapping) or d.get("kind") != cls._KIND or "samples" not in d:
            raise InputError("not the dict of a latency result with its arrays (LatencyResult.to_dict())")
        n = len(d["cpus"])
        samples = array_from_json(d["samples"]).reshape(n, n, -1)
        extras = {k: array_from_json(e["values"], np.dtype(e["dtype"]))
                  for k, e in d.get("extras", {}).items()}
        return cls(cpus=tuple(d["cpus"]), kernel=d["kernel"], samples=samples, metadata=d.get("metadata", {}),
                   name=d.get("name", ""), flags=array_from_json(d["flags"], np.uint32), extras=extras)

    # -- files ---------------------------------------------------------------------------------
    def _to_npz(self):
        return _schema.npz_parts(self)

    @classmethod
    def _from_npz(cls, header, arrays, path):
        header = _schema.check_header(header, path)
        cpus, samples, flags, extras = _schema.check_arrays(header, arrays, path)
        for a in (samples, flags, *extras.values()):  # just read, no one else's: kept, not copied
            _seal(a)

        def build():
            return cls(cpus=cpus, kernel=header.get("kernel", "?"), samples=samples,
                       metadata=header.get("metadata", {}), name=header.get("name", ""), flags=flags,
                       extras=extras)

        return from_file(path, build)

    @classmethod
    def from_matrix(cls, matrix: npt.ArrayLike, cpus: Sequence[int] | None = None, *,
                    kernel: str = "unknown", name: str = "", metadata: Mapping[str, Any] | None = None,
                    symmetric: bool = True) -> LatencyResult:
        """A result from a plain ``(n, n)`` matrix of one value per pair.

        Parameters
        ----------
        matrix : array_like
            Square matrix of latencies in ns; missing cells NaN; the diagonal is ignored.
        cpus : sequence of int, optional
            Labels of the rows and columns (default ``0 .. n-1``).
        kernel : str
            What measured it (another tool's name, say).
        name : str
            A label for comparisons.
        metadata : dict, optional
            Extra metadata to keep with the result.
        symmetric : bool
            Mirror a pair known in one half only to the other.

        Returns
        -------
        LatencyResult
            A value-only result (:attr:`value_only`): one sample per pair.

        Raises
        ------
        InputError
            For a matrix that is not square, smaller than 2 x 2, or labels that do not fit it.

        Examples
        --------
        >>> import corelat
        >>> r = corelat.LatencyResult.from_matrix([[0, 50], [float("nan"), 0]])
        >>> r.median.tolist(), r.value_only
        ([[nan, 50.0], [50.0, nan]], True)
        """
        cpus, samples, flags = _matrix.value_only(matrix, cpus, symmetric)
        md = {"value_only": True, "symmetric": bool(symmetric), **(metadata or {})}
        return cls(cpus=cast("tuple[int, ...]", cpus), kernel=kernel, samples=samples, metadata=md, name=name,
                   flags=flags)

    def __repr__(self):
        return self._repr(f"kernel {self.kernel}, {self.n} CPUs, {self.samples.shape[2]} samples per pair")
