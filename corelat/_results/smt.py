"""The SMT result: what SMT siblings cost each other, per pair of siblings."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

from corelat._core import stats as _stats
from corelat._core import text as _text
from corelat._core.errors import InputError
from corelat._core.protocol import (
    SavedResult,
    array_from_json,
    freeze,
    from_file,
    frozen_array,
    jsonable,
    keyword_options,
    thaw,
)
from corelat._system.validate import check_statistic, sampling_text

_LEVEL_TEXT = {"l2": "L2", "l3": "L3", "node": "node", "package": "pkg", "any": "any"}


def _median(a, axis):
    # All-NaN rows (nothing measured, or every sample dropped) are NaN, without a RuntimeWarning
    # (and without warnings.catch_warnings, which is not thread-safe).
    a = np.asarray(a, dtype=np.float64)
    return _stats.median(a if axis is not None else a.reshape(-1))


#: statistic name -> the function of :mod:`corelat._core.stats` computing it per row.
_STATISTIC = {"median": _stats.median, "mean": _stats.mean, "min": _stats.minimum, "max": _stats.maximum,
              "std": _stats.std}


@dataclass(frozen=True, eq=False, repr=False)
class SMTResult(SavedResult):
    """What SMT siblings cost each other, pair by pair: an immutable value (arrays are read-only).

    Made by :func:`corelat.smt` or :func:`corelat.load`; ``len(result)`` is the number of sibling
    pairs.

    Attributes
    ----------
    cpus : tuple of int
        The CPUs that were considered (the selection), ascending.
    kernel : str
        The ping-pong kernel of the latencies (``"cas"`` or ``"rw"``).
    pairs : numpy.ndarray
        int ``(k, 2)``: the sibling pairs, in topology order; the first CPU of a pair is the timing
        side and the CPU whose nearest non-sibling is measured.
    partners : numpy.ndarray
        int ``(k,)``: the nearest non-sibling of ``pairs[:, 0]`` among ``cpus`` (-1 where the
        selection has none).
    partner_levels : tuple of str
        ``k`` entries: what the partner shares with it, ``"l2"``, ``"l3"``, ``"node"``,
        ``"package"`` or ``"any"`` (``""`` where there is no partner).
    sibling_samples : numpy.ndarray
        float64 ``(k, samples)``: one-way latencies in ns between the siblings (NaN where a sample
        was dropped because a thread was off its CPU).
    nonsibling_samples : numpy.ndarray
        float64 ``(k, samples)``: the same from ``pairs[:, 0]`` to its partner.
    loops : tuple of str
        Names of the busy loops, the last axis of the throughput arrays.
    alone : numpy.ndarray
        float64 ``(k, 2, len(loops))``: iterations per second of each CPU of the pair running the
        loop alone, its sibling idle.
    together : numpy.ndarray
        float64 ``(k, 2, len(loops))``: the same with both siblings running it at once.
    metadata : Mapping
        Read-only mapping: parameters, timer, topology, system information.
    reason : str or None
        Why there is nothing to show (None when pairs were measured).
    name : str
        A label (the host name by default).

    Examples
    --------
    One CPU has no sibling in the selection, so this result is empty and says why:

    >>> import corelat
    >>> r = corelat.smt(cpus=[0])
    >>> len(r), r.empty, r.reason is not None
    (0, True, True)
    """

    cpus: tuple
    kernel: str
    pairs: np.ndarray
    partners: np.ndarray
    partner_levels: tuple
    sibling_samples: np.ndarray
    nonsibling_samples: np.ndarray
    loops: tuple
    alone: np.ndarray
    together: np.ndarray
    metadata: Mapping[str, Any] = field(default_factory=dict)
    reason: str | None = None
    name: str = ""

    _KIND = "smt"
    _FIELDS = ("cpus", "kernel", "pairs", "partners", "partner_levels", "sibling_samples",
               "nonsibling_samples", "loops", "alone", "together", "metadata", "reason", "name")
    _ARRAYS = ("pairs", "partners", "sibling_samples", "nonsibling_samples", "alone", "together")

    def __post_init__(self):
        set_ = functools.partial(object.__setattr__, self)
        pairs = np.asarray(self.pairs, dtype=np.int64).reshape(-1, 2)
        k = len(pairs)
        loops = tuple(str(x) for x in self.loops)
        shapes = {
            "partners": (np.int64, (k,)),
            "sibling_samples": (np.float64, None),
            "nonsibling_samples": (np.float64, None),
            "alone": (np.float64, (k, 2, len(loops))),
            "together": (np.float64, (k, 2, len(loops))),
        }
        arrays = {}
        for name, (dtype, shape) in shapes.items():
            a = np.asarray(getattr(self, name), dtype=dtype)
            if shape is None:
                shape = (k, a.shape[1] if a.ndim == 2 else 0)
                if a.size == 0:
                    a = a.reshape(shape)
            if a.shape != shape:
                raise InputError(f"{name} must have shape {shape}, got {a.shape}")
            arrays[name] = a
        if arrays["sibling_samples"].shape != arrays["nonsibling_samples"].shape:
            raise InputError("sibling_samples and nonsibling_samples must have the same shape")
        levels = tuple(str(x) for x in self.partner_levels)
        if len(levels) != k:
            raise InputError(f"partner_levels must have {k} entries, got {len(levels)}")
        set_("cpus", tuple(int(c) for c in self.cpus))
        set_("kernel", str(self.kernel))
        set_("pairs", frozen_array(pairs))
        for name, a in arrays.items():
            set_(name, frozen_array(a))
        set_("partner_levels", levels)
        set_("loops", loops)
        set_("metadata", freeze(thaw(self.metadata)))
        set_("reason", None if self.reason is None else str(self.reason))
        set_("name", str(self.name))

    def __len__(self):
        """The number of sibling pairs."""
        return len(self.pairs)

    @property
    def empty(self) -> bool:
        """True when no sibling pair was measured (see :attr:`reason`)."""
        return len(self.pairs) == 0

    @property
    def sibling_latency(self) -> npt.NDArray[np.float64]:
        """Median one-way latency between the siblings of each pair, ns, ``(k,)``."""
        return _median(self.sibling_samples, -1)

    @property
    def nonsibling_latency(self) -> npt.NDArray[np.float64]:
        """Median one-way latency from each pair's first CPU to its nearest non-sibling, ns, ``(k,)``."""
        return _median(self.nonsibling_samples, -1)

    @property
    def slowdown(self) -> npt.NDArray[np.float64]:
        """alone / together per pair, CPU and loop, ``(k, 2, len(loops))``: 2 = half speed."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.alone / self.together

    @keyword_options("statistic")
    def records(self, *, statistic: str = "median") -> list[dict[str, Any]]:
        """One dict per sibling pair: the numbers of :meth:`table`.

        Parameters
        ----------
        statistic : str
            The statistic of each pair's latency samples in ``sibling_ns`` and ``nonsibling_ns``
            (``"median"``, ``"mean"``, ``"min"``, ``"max"``, ``"std"``).

        Returns
        -------
        list of dict
            ``cpus``, ``sibling_ns``, ``partner``, ``partner_level``, ``nonsibling_ns`` and per
            loop ``{loop}_alone``, ``{loop}_together`` (mean per-thread iterations per second) and
            ``{loop}_slowdown`` (their ratio).
        """
        stat = _STATISTIC[check_statistic(statistic)]
        sib, non = stat(self.sibling_samples), stat(self.nonsibling_samples)
        with np.errstate(divide="ignore", invalid="ignore"):
            alone = self.alone.mean(axis=1)
            together = self.together.mean(axis=1)
            slow = alone / together
        out = []
        for i, (a, b) in enumerate(self.pairs.tolist()):
            row = {
                "cpus": (a, b),
                "sibling_ns": float(sib[i]),
                "partner": int(self.partners[i]) if self.partners[i] >= 0 else None,
                "partner_level": self.partner_levels[i] or None,
                "nonsibling_ns": float(non[i]),
            }
            for j, loop in enumerate(self.loops):
                row[f"{loop}_alone"] = float(alone[i, j])
                row[f"{loop}_together"] = float(together[i, j])
                row[f"{loop}_slowdown"] = float(slow[i, j])
            out.append(row)
        return out

    @keyword_options("statistic")
    def summary(self, *, statistic: str = "median") -> dict[str, Any]:
        """Medians over the sibling pairs.

        Parameters
        ----------
        statistic : str
            The statistic of each pair's latency samples (see :meth:`records`).

        Returns
        -------
        dict
            ``pairs``, ``kernel``, ``reason``, ``sibling_ns``, ``nonsibling_ns`` and per loop
            ``{loop}_slowdown`` (None where unknown or empty).
        """
        rows = self.records(statistic=statistic)
        out = {"pairs": len(self), "kernel": self.kernel, "reason": self.reason}
        keys = ["sibling_ns", "nonsibling_ns"] + [f"{loop}_slowdown" for loop in self.loops]
        for key in keys:
            v = float(_median([r[key] for r in rows], None)) if rows else None
            out[key] = v if v is not None and np.isfinite(v) else None
        return out

    def to_dict(self, *, arrays: bool = True) -> dict[str, Any]:
        """The result as plain, strict-JSON data (NaN becomes None); :meth:`from_dict` reads it back.

        Parameters
        ----------
        arrays : bool
            Include the raw arrays (what :meth:`from_dict` needs); False leaves the figures only.

        Returns
        -------
        dict
            ``kind``, ``name``, ``kernel``, ``cpus``, ``loops``, ``summary``, ``records`` (one per
            pair), ``reason``, ``warnings``, ``notes``, ``metadata`` and, with ``arrays``,
            ``partner_levels``, ``samples_per_pair`` and the arrays by their attribute names
            (``pairs``, ``partners``, ``sibling_samples``, ``nonsibling_samples``, ``alone``,
            ``together``).
        """
        d = {"kind": self._KIND, "name": self.name, "kernel": self.kernel, "cpus": list(self.cpus),
             "loops": list(self.loops), "summary": self.summary(), "records": self.records(),
             "reason": self.reason, "warnings": list(self.warnings), "notes": list(self.notes),
             "metadata": self.metadata}
        if arrays:
            d["partner_levels"] = list(self.partner_levels)
            d["samples_per_pair"] = self.sibling_samples.shape[1]  # not in the lists when there is no pair
            d.update({k: getattr(self, k) for k in self._ARRAYS})
        return jsonable(d)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SMTResult:
        """A result from what :meth:`to_dict` gave (with ``arrays``).

        Parameters
        ----------
        d : dict
            ``to_dict()`` output, after a trip through JSON or not.

        Returns
        -------
        SMTResult

        Raises
        ------
        InputError
            When ``d`` is not an SMT result's dict, or lacks the arrays.
        """
        if not isinstance(d, Mapping) or d.get("kind") != cls._KIND or "sibling_samples" not in d:
            raise InputError("not the dict of an SMT result with its arrays (SMTResult.to_dict())")
        k, loops, per_pair = len(d["pairs"]), len(d["loops"]), int(d["samples_per_pair"])
        shapes = {"pairs": (k, 2), "partners": (k,), "sibling_samples": (k, per_pair),
                  "nonsibling_samples": (k, per_pair), "alone": (k, 2, loops), "together": (k, 2, loops)}
        arrays = {name: array_from_json(d[name], np.int64 if name in ("pairs", "partners") else np.float64)
                  .reshape(shape) for name, shape in shapes.items()}
        return cls(cpus=tuple(d["cpus"]), kernel=d["kernel"], loops=tuple(d["loops"]),
                   partner_levels=tuple(d["partner_levels"]), metadata=d.get("metadata", {}),
                   reason=d.get("reason"), name=d.get("name", ""), **arrays)

    def _to_npz(self):
        header = {"kernel": self.kernel, "name": self.name, "reason": self.reason, "loops": list(self.loops),
                  "partner_levels": list(self.partner_levels), "metadata": thaw(self.metadata)}
        arrays = {k: getattr(self, k) for k in self._ARRAYS}
        arrays["cpus"] = np.asarray(self.cpus, dtype=np.int64)
        return header, arrays

    @classmethod
    def _from_npz(cls, header, arrays, path):
        return from_file(path, lambda: cls(
            cpus=tuple(int(c) for c in arrays["cpus"]), kernel=header["kernel"], loops=tuple(header["loops"]),
            partner_levels=tuple(header["partner_levels"]), metadata=header.get("metadata", {}),
            reason=header.get("reason"), name=header.get("name", ""), **{k: arrays[k] for k in cls._ARRAYS}))

    def describe(self) -> str:
        """The "Hyper-threads" report (or the reason there is none): what ``print(result)`` shows.

        Returns
        -------
        str
            ``table(statistic="median")``.
        """
        return self.table()

    @keyword_options("statistic")
    def table(self, *, statistic: str = "median") -> str:
        """The "Hyper-threads" table as text (or the reason there is none).

        Parameters
        ----------
        statistic : str
            The statistic of each pair's latency samples (see :meth:`records`).

        Returns
        -------
        str
            What is measured, then one row per pair and the medians over pairs.
        """
        rows = self.records(statistic=statistic)
        if self.empty:
            return "\n".join([f"Hyper-threads: none to measure: {self.reason}"] + self._topology_lines())
        lines = [f"Hyper-threads: {len(self)} pair{'s' if len(self) != 1 else ''} of SMT siblings",
                 *self._topology_lines(), *self._method_lines(statistic), "",
                 _pair_table(rows, self.loops), ""]

        def median(key):
            return _median([r[key] for r in rows], None)

        med = [f"sibling {_text.number(median('sibling_ns'), ' ns')}",
               f"nearest non-sibling {_text.number(median('nonsibling_ns'), ' ns')}"]
        med += [f"{loop} slowdown {_text.ratio(median(f'{loop}_slowdown'))}" for loop in self.loops]
        lines.append("Median over pairs: " + ", ".join(med))
        return "\n".join(lines)

    def _topology_lines(self):
        topo = self.metadata.get("topology_summary")
        return [f"Topology: {topo}"] if topo else []

    def _method_lines(self, statistic):
        md = self.metadata
        params = md.get("parameters", {})
        lines = [
            f"Kernel: {self.kernel}: {md.get('kernel_description', '')}",
            (f"Latency: one-way = round-trip time / 2, {statistic} ns "
             f"({params.get('round_trips')} round trips per sample, {sampling_text(params)})"),
            (f"Throughput: M iterations/s per thread, each loop {params.get('duration')} s: the CPU alone"
             " (sibling idle), then both siblings running it; slowdown = alone / both"),
        ]
        return lines + [f"  {loop}: {LOOPS.get(loop, '')}" for loop in self.loops]

    def __repr__(self):
        what = (f"{len(self)} pair{'s' if len(self) != 1 else ''}" if not self.empty
                else f"empty: {self.reason}")
        return self._repr(f"kernel {self.kernel}, {what}")


def _pair_table(rows, loops):
    header = ["CPUs", "sibling ns", "non-sibling (shares)", "ns"]
    for loop in loops:
        header += [f"{loop} alone", "both", "slowdown"]
    body = []
    for r in rows:
        partner = "-" if r["partner"] is None else f"{r['partner']} ({_LEVEL_TEXT[r['partner_level']]})"
        cells = [f"{r['cpus'][0]},{r['cpus'][1]}", _text.number(r["sibling_ns"]), partner,
                 _text.number(r["nonsibling_ns"])]
        for loop in loops:
            cells += [_text.number(r[f"{loop}_alone"] / 1e6), _text.number(r[f"{loop}_together"] / 1e6),
                      _text.ratio(r[f"{loop}_slowdown"])]
        body.append(cells)
    return _text.table(header, body, left=(2,))


#: The busy loops: name -> (what one iteration is, what it stresses). Order = the C kernel's codes.
LOOPS = {
    "alu": "four independent 64-bit multiply-adds (the core's integer multiplier)",
    "mem": "one load of a dependent pointer chase through a private 64 KiB buffer (L1 misses, L2 hits)",
}
