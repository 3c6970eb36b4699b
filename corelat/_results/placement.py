"""The placement result: one latency matrix per home of the line, and what the homes change."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from corelat._core.errors import InputError
from corelat._core.protocol import SavedResult, jsonable, keyword_options, prefixed, refuse_assignment
from corelat._core.types import Statistic
from corelat._results.latency import LatencyResult, PairFlag
from corelat._system.home import SPREAD_NODE, parse_home
from corelat._system.validate import check_statistic

if TYPE_CHECKING:  # annotations only
    import numpy.typing as npt


#: The roles of a cell's two CPUs per kernel: (the CPU the first role names, its word, the other's word).
#: cas/rw: the measured cell (r, c) was timed by cpus[c]; oneway: cpus[r] sent; chase: cpus[r] owned.
_ROLES = {
    "cas": ("c", "initiator", "responder"),
    "rw": ("c", "initiator", "responder"),
    "oneway": ("r", "sender", "receiver"),
    "read-clean": ("r", "owner", "reader"),
    "read-modified": ("r", "owner", "reader"),
}


class PlacementResult(SavedResult):
    """The latency matrix measured once per home of the line; made by :func:`corelat.placement`.

    A placement result is a value: assigning an attribute raises
    :class:`dataclasses.FrozenInstanceError`, and its results' arrays are read-only.

    Parameters
    ----------
    homes : sequence of str
        The homes, as :func:`corelat.measure` takes them.
    results : sequence of LatencyResult
        One per home, same CPUs in the same order, same kernel.
    name : str, optional
        A label (default: the first result's name).

    Attributes
    ----------
    homes : tuple of str
        The homes, as labels (``"node:0"``, ``"responder"``, ...), in measuring order.
    results : tuple of LatencyResult
        One per home, same CPUs in the same order.
    cpus : tuple of int
        The CPUs of the results.
    kernel : str
        The kernel of the results.
    name : str
        A label.

    Examples
    --------
    >>> import corelat
    >>> r = corelat.placement([0, 1], homes=["initiator", "responder"], samples=5, round_trips=20)
    >>> r.median.shape, r.result("responder").cpus
    ((2, 2, 2), (0, 1))
    """

    _KIND = "placement"
    _FIELDS = ("homes", "name", "results")
    homes: tuple[str, ...]
    results: tuple[LatencyResult, ...]
    cpus: tuple[int, ...]
    kernel: str
    name: str

    def __init__(self, homes, results, *, name=None):
        homes = tuple(parse_home(h).label for h in homes)
        results = tuple(results)
        if not results or len(homes) != len(results):
            raise InputError(f"{len(homes)} homes for {len(results)} results")
        if len(set(homes)) != len(homes):
            raise InputError(f"a home appears twice: {homes}")
        first = results[0]
        for r in results[1:]:
            if r.cpus != first.cpus or r.kernel != first.kernel:
                raise InputError("the results of a placement run must share their CPUs (in order) and kernel")
        set_ = object.__setattr__
        set_(self, "homes", homes)
        set_(self, "results", results)
        set_(self, "cpus", first.cpus)
        set_(self, "kernel", first.kernel)
        set_(self, "name", first.name if name is None else str(name))

    __setattr__ = refuse_assignment
    __delattr__ = refuse_assignment

    # -- arrays ------------------------------------------------------------------------------------
    @property
    def n(self) -> int:
        """Number of CPUs."""
        return len(self.cpus)

    @property
    def median(self) -> npt.NDArray[np.float64]:
        """``(homes, n, n)`` median latency per pair and home, ns."""
        return np.stack([r.median for r in self.results])

    @property
    def home_node(self) -> npt.NDArray[np.int64]:
        """``(homes, n, n)`` node each measured cell's page was found on; -1 where unknown."""
        return np.stack([np.asarray(r.extras.get("home_node", np.full((self.n, self.n), -1)), dtype=np.int64)
                         for r in self.results])

    def result(self, home: int | str) -> LatencyResult:
        """The result of one home.

        Parameters
        ----------
        home : str or int
            Its label (``"node:1"``), a NUMA node number K (meaning ``"node:K"``), or, where no
            home is a node, its position in :attr:`homes`.

        Returns
        -------
        LatencyResult

        Raises
        ------
        InputError
            When the result holds no such home.
        """
        if isinstance(home, (int, np.integer)) and not isinstance(home, bool):
            label = f"node:{int(home)}"
            if label in self.homes:
                return self.results[self.homes.index(label)]
            if 0 <= home < len(self.homes) and not any(h.startswith("node:") for h in self.homes):
                return self.results[int(home)]
        elif isinstance(home, str) and parse_home(home).label in self.homes:
            return self.results[self.homes.index(parse_home(home).label)]
        raise InputError(f"no home {home!r} in this result; it has {', '.join(self.homes)}")

    @property
    def metadata(self) -> Mapping[str, Any]:
        """The first home's metadata (machine, kernel, parameters; every home shares them)."""
        return self.results[0].metadata

    @property
    def warnings(self) -> tuple[str, ...]:
        """Every home's warnings, each prefixed with its home."""
        return prefixed(self.homes, self.results, "warnings", "[{label}] {text}")

    @property
    def notes(self) -> tuple[str, ...]:
        """Every home's notes, each prefixed with its home."""
        return prefixed(self.homes, self.results, "notes", "[{label}] {text}")

    # -- what the homes change --------------------------------------------------------------------
    def _cpu_places(self):
        topo = self.results[0].topology
        if topo is None:
            return {}
        return {r["cpu"]: (r["node"], r["package"]) for r in topo.records()}

    @keyword_options("statistic")
    def records(self, *, statistic: Statistic = "median") -> list[dict[str, Any]]:
        """One dict per home and measured cell.

        Parameters
        ----------
        statistic : str
            The per-pair statistic given (``"median"``, ``"mean"``, ``"min"``, ``"max"``, ``"std"``).

        Returns
        -------
        list of dict
            ``home``, ``row`` and ``col`` (CPU ids), the statistic (keyed by its name, ns),
            ``home_node`` (where the page was found), ``pair`` ("within a node", "across nodes
            of a package", "across packages" or None) and ``relation`` of the home to the cell's
            two CPUs ("with the initiator", "with the responder", "with both", "on a third node"
            or None; the roles are "sender"/"receiver" for oneway, "owner"/"reader" for
            read-clean/read-modified).
        """
        places = self._cpu_places()
        which, first_word, second_word = _ROLES.get(self.kernel, ("c", "initiator", "responder"))
        out = []
        for label, res in zip(self.homes, self.results):
            h = parse_home(label)
            med, flags = res.statistic(statistic), np.asarray(res.flags)
            found = res.extras.get("home_node")
            symmetric = res.metadata.get("symmetric", True)
            for r in range(self.n):
                for c in range(self.n):
                    if r == c or not np.isfinite(med[r, c]):
                        continue
                    if symmetric and not flags[r, c] & PairFlag.MEASURED:
                        continue  # the mirrored copy of a measured cell
                    a, b = (self.cpus[c], self.cpus[r]) if which == "c" else (self.cpus[r], self.cpus[c])
                    node = int(found[r, c]) if found is not None else -1
                    if node < 0 and h.kind == "node" and node != SPREAD_NODE:
                        node = h.value  # not verified: what was asked
                    out.append({"home": label, "row": self.cpus[r], "col": self.cpus[c],
                                statistic: float(med[r, c]), "home_node": node,
                                "pair": _pair_kind(places, a, b),
                                "relation": _relation(places, a, b, node, first_word, second_word)})
        return out

    @keyword_options("statistic")
    def summary(self, *, statistic: Statistic = "median") -> dict[str, dict[str, dict[str, Any]]]:
        """What the homes change, per kind of pair.

        Parameters
        ----------
        statistic : str
            The per-pair statistic summarised (see :meth:`records`).

        Returns
        -------
        dict
            ``{pair kind: {relation: {"median": ns, "cells": count}}}`` over every home: the
            median of the cells' statistic for each kind of pair and relation of the home to the
            pair (see :meth:`records`).
        """
        groups: dict[str, dict[str, list[float]]] = {}
        for rec in self.records(statistic=check_statistic(statistic)):
            if rec["pair"] is None or rec["relation"] is None:
                continue
            groups.setdefault(rec["pair"], {}).setdefault(rec["relation"], []).append(rec[statistic])
        _, first, second = _ROLES.get(self.kernel, ("c", "initiator", "responder"))
        order = [f"with the {first}", f"with the {second}", "with both", "on a third node"]
        return {pair: {rel: {"median": float(np.median(groups[pair][rel])), "cells": len(groups[pair][rel])}
                       for rel in sorted(groups[pair], key=order.index)}
                for pair in sorted(groups, key=_PAIR_ORDER.index)}

    def describe(self) -> str:
        """The result in words: :meth:`table`, then what the homes change per kind of pair, e.g.
        "across packages: 114 ns homed with the initiator, 176 ns homed with the responder, 190 ns
        homed on a third node" (what ``print(result)`` shows).

        Returns
        -------
        str
        """
        s = self.summary()
        if not s:
            words = "where the line lives: unknown (no topology or no verified homes)"
        else:
            words = "\n".join(f"{pair}: " + ", ".join(f"{v['median']:.0f} ns homed {rel}"
                                                      for rel, v in rels.items())
                              for pair, rels in s.items())
        return self.table() + "\n" + words

    @keyword_options("statistic")
    def table(self, *, statistic: Statistic = "median") -> str:
        """The homes as text: where each one's pages were found and the median of its pairs.

        Parameters
        ----------
        statistic : str
            The per-pair statistic whose median over pairs is shown.

        Returns
        -------
        str
            A title line, then one line per home.
        """
        lines = [f"Where the line lives: kernel {self.kernel}, {self.n} CPUs, {len(self.homes)} home(s)"]
        for label, res in zip(self.homes, self.results):
            found = res.extras.get("home_node")
            seen = sorted({int(v) for v in np.asarray(found).ravel() if v >= 0}) if found is not None else []
            where = ", ".join(f"node {k}" for k in seen) or "not verified"
            lines.append(f"  {label:<12} pages found on {where}; {statistic} of pairs "
                         f"{np.nanmedian(res.statistic(statistic)):.1f} ns")
        return "\n".join(lines)

    def __repr__(self):
        return self._repr(f"{self.kernel}, {self.n} CPUs, homes {', '.join(self.homes)}")

    def to_dict(self, *, arrays: bool = True) -> dict[str, Any]:
        """The result as plain, strict-JSON data (NaN becomes None); :meth:`from_dict` reads it back.

        Parameters
        ----------
        arrays : bool
            Include every home's whole result (``results``: :meth:`LatencyResult.to_dict` with its
            arrays, what :meth:`from_dict` needs); False leaves the figures only.

        Returns
        -------
        dict
            ``kind``, ``name``, ``kernel``, ``cpus``, ``homes``, per-home ``median`` and
            ``home_node`` matrices, ``summary``, ``records``, ``warnings``, ``notes`` and, with
            ``arrays``, ``results``.
        """
        d = {"kind": self._KIND, "name": self.name, "kernel": self.kernel, "cpus": list(self.cpus),
             "homes": list(self.homes), "median": self.median, "home_node": self.home_node,
             "summary": self.summary(), "records": self.records(), "warnings": list(self.warnings),
             "notes": list(self.notes)}
        if arrays:
            d["results"] = [r.to_dict() for r in self.results]
        return jsonable(d)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PlacementResult:
        """A result from what :meth:`to_dict` gave (with ``arrays``).

        Parameters
        ----------
        d : dict
            ``to_dict()`` output, after a trip through JSON or not.

        Returns
        -------
        PlacementResult

        Raises
        ------
        InputError
            When ``d`` is not a placement result's dict, or lacks the results.
        """
        if not isinstance(d, Mapping) or d.get("kind") != cls._KIND or "results" not in d:
            raise InputError("not the dict of a placement result with its results "
                             "(PlacementResult.to_dict())")
        return cls(d["homes"], [LatencyResult.from_dict(r) for r in d["results"]], name=d.get("name"))

    # -- files (SavedResult.save / corelat.load) -----------------------------------------------------------
    def _to_npz(self):
        parts, arrays = [], {}
        for k, res in enumerate(self.results):
            header, arr = res._to_npz()
            parts.append(header)
            arrays.update({f"h{k}_{name}": v for name, v in arr.items()})
        return {"name": self.name, "homes": list(self.homes), "results": parts}, arrays

    @classmethod
    def _from_npz(cls, header, arrays, path):
        homes, parts = header.get("homes"), header.get("results")
        if (not isinstance(homes, list) or not isinstance(parts, list) or len(homes) != len(parts)
                or not homes):
            raise InputError(f"{path}: inconsistent corelat placement file (homes and results differ)")
        results = []
        for k, part in enumerate(parts):
            prefix = f"h{k}_"
            sub = {name[len(prefix):]: v for name, v in arrays.items() if name.startswith(prefix)}
            results.append(LatencyResult._from_npz(part, sub, path))
        return cls(homes=homes, results=results, name=header.get("name"))


def per_home(results):
    """``[(result, suffix)]``: a :class:`PlacementResult` becomes one entry per home, suffixed with
    it (``" [home node:1]"``), every other result one entry with no suffix."""
    out = []
    for r in results:
        if isinstance(r, PlacementResult):
            out.extend((sub, f" [home {h}]") for h, sub in zip(r.homes, r.results))
        else:
            out.append((r, ""))
    return out


def _pair_kind(places, a, b):
    if a not in places or b not in places or None in places[a] or None in places[b]:
        return None
    (na, pa), (nb, pb) = places[a], places[b]
    if na == nb:
        return "within a node"
    return "across nodes of a package" if pa == pb else "across packages"


def _relation(places, a, b, node, first, second):
    if node < 0 or a not in places or b not in places:
        return None
    na, nb = places[a][0], places[b][0]
    if node == na and node == nb:
        return "with both"
    if node == na:
        return f"with the {first}"
    if node == nb:
        return f"with the {second}"
    return "on a third node"


_PAIR_ORDER = ("within a node", "across nodes of a package", "across packages")
