"""The reference: what a known-good machine looks like, per latency class, with a tolerance each.

:func:`corelat.reference` makes one from one result or from the results of alike machines (a fleet
group); :func:`corelat.verify` judges a machine against it (a :class:`~corelat.Verdict`). A reference
keeps the classification of the CPU pairs it was made with (``codes``): a machine is judged by the
reference's classes, never by classes found again on the machine being judged, whose structure may be
what is wrong with it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from corelat._core import text as _text
from corelat._core.errors import InputError
from corelat._core.protocol import (
    SavedResult,
    array_from_json,
    freeze,
    from_file,
    frozen_array,
    jsonable,
    refuse_assignment,
    register_file_check,
    thaw,
)
from corelat._results import schema as _schema

#: What each class of pairs is, for the text of a reference and of a verdict. Topology classes
#: (``corelat._analysis.classes.TOPOLOGY_CLASSES``) and those read from a matrix's structure.
CLASS_WORDS = {
    "smt": "SMT siblings (two threads of one core)",
    "l2": "same L2, different cores",
    "l3": "same L3, different L2",
    "package": "across L3s of one package",
    "packages": "across packages",
    "across": "across the coarsest groups the matrix shows",
    "cores": "between cores (the matrix shows no grouping)",
}


def class_words(name: str) -> str:
    """What the pairs of class ``name`` are, in words."""
    if name in CLASS_WORDS:
        return CLASS_WORDS[name]
    if name.startswith("within") and name[6:].isdigit():
        return f"within the groups of structure level {name[6:]}"
    return name


def _per_class(k, **fields):
    """The per-class arrays of a reference, read-only and checked: one value per class each."""
    out = {}
    for field, values in fields.items():
        a = frozen_array(values, np.int64 if field == "pairs" else np.float64)
        if a.shape != (k,):
            raise InputError(f"{field} needs one value per class ({k}), not shape {a.shape}")
        out[field] = a
    if not (np.all(np.isfinite(out["centre"])) and np.all(out["centre"] > 0)):
        raise InputError("every class centre must be a positive latency")
    tol = out["tolerance"]
    if not (np.all(np.isfinite(tol)) and np.all(tol > 0) and np.all(tol < 10)):
        raise InputError("every tolerance must be a positive fraction (0.05 is ±5 %)")
    if not (np.all(np.isfinite(out["spread"])) and np.all(out["spread"] >= 0)):
        raise InputError("every spread must be a fraction, 0 or more")
    return out


class Reference(SavedResult):
    """What a known-good machine looks like: per latency class a centre (ns) and a tolerance.

    Made by :func:`corelat.reference`; :func:`corelat.verify` judges a result against it. A value:
    it compares by value, saves to a corelat ``.npz`` file that :func:`corelat.load` reads back.

    Parameters
    ----------
    cpus : sequence of int
        The reference machine's CPU ids, ascending.
    classes : sequence of str
        The latency classes, in the order of ``codes``' indices.
    codes : array_like
        ``(n, n)`` int8: the class index of each pair of ``cpus`` (-1 on the diagonal and where
        the pair belongs to no class).
    centre : array_like
        Per class: the typical median latency of its pairs, ns.
    tolerance : array_like
        Per class: how far (a fraction: 0.05 is ±5 %) a machine's class median may lie from the
        centre and still be within.
    spread : array_like
        Per class: the robust relative spread of the class's pairs on one machine (a fraction);
        a verdict widens the tolerance of a class measured on few pairs by it.
    pairs : array_like
        Per class: how many pairs the reference machine(s) measured in it.
    metadata : dict, optional
        Identity (``cpu_model``, ``cpu_count``, ``topology_summary``, ``kernel``,
        ``class_source``) and provenance (``sources``, ``machines``, ``date``, ``floor``, ...).
    name : str
        What a verdict calls the reference (``vs epyc-7742``).

    Examples
    --------
    >>> import corelat
    >>> ref = corelat.reference(corelat.load(corelat.example_files()[0]), name="vm")
    >>> ref.classes, ref.machines
    (('l3',), 1)
    """

    __slots__ = ("centre", "classes", "codes", "cpus", "metadata", "name", "pairs", "spread", "tolerance")
    _KIND = "reference"
    _FIELDS = ("name", "cpus", "classes", "codes", "centre", "tolerance", "spread", "pairs", "metadata")
    cpus: tuple[int, ...]
    classes: tuple[str, ...]
    codes: np.ndarray
    centre: np.ndarray
    tolerance: np.ndarray
    spread: np.ndarray
    pairs: np.ndarray
    metadata: Mapping[str, Any]
    name: str

    def __init__(self, cpus: Sequence[int], classes: Sequence[str], codes: Any, centre: Any, tolerance: Any,
                 spread: Any, pairs: Any, *, metadata: Mapping[str, Any] | None = None, name: str = ""):
        cpus = tuple(int(c) for c in cpus)
        classes = tuple(str(c) for c in classes)
        n, k = len(cpus), len(classes)
        codes = frozen_array(codes, np.int8)
        if codes.shape != (n, n):
            raise InputError(f"a reference of {n} CPUs needs ({n}, {n}) pair classes, not {codes.shape}")
        if n < 2 or len(set(cpus)) != n or min(cpus) < 0:
            raise InputError("a reference needs at least 2 distinct CPU ids, none negative")
        if k == 0 or len(set(classes)) != k:
            raise InputError("a reference needs at least one latency class, each named once")
        if codes.size and (codes.min() < -1 or codes.max() >= k):
            raise InputError(f"pair classes must be -1 to {k - 1}")
        per_class = _per_class(k, centre=centre, tolerance=tolerance, spread=spread, pairs=pairs)
        set_ = object.__setattr__
        set_(self, "cpus", cpus)
        set_(self, "classes", classes)
        set_(self, "codes", codes)
        for field, a in per_class.items():
            set_(self, field, a)
        set_(self, "metadata", freeze(thaw(dict(metadata or {}))))
        set_(self, "name", str(name))

    __setattr__ = refuse_assignment
    __delattr__ = refuse_assignment

    # -- identity and provenance ------------------------------------------------------------------------
    @property
    def cpu_model(self) -> str | None:
        """The reference machine's CPU model, where its results said."""
        return self.metadata.get("cpu_model")

    @property
    def kernel(self) -> str:
        """The kernel its results were measured with (``"unknown"`` for other tools' files)."""
        return str(self.metadata.get("kernel") or "unknown")

    @property
    def machines(self) -> int:
        """How many machines' results it was made from."""
        return int(self.metadata.get("machines", 1))

    @property
    def floor(self) -> float | None:
        """The least tolerance it was made with (a fraction), where recorded."""
        v = self.metadata.get("floor")
        return None if v is None else float(v)

    def index(self, name: str) -> int:
        """The position of a class in :attr:`classes`.

        Parameters
        ----------
        name : str
            The class (``"smt"``, ``"l3"``, ...).

        Returns
        -------
        int

        Raises
        ------
        InputError
            For a class the reference lacks.
        """
        try:
            return self.classes.index(name)
        except ValueError:
            raise InputError(f"the reference has no class {name!r} (it has "
                             f"{', '.join(self.classes)})") from None

    # -- the verbs -----------------------------------------------------------------------------------------
    def records(self) -> list[dict[str, Any]]:
        """One dict per class.

        Returns
        -------
        list of dict
            ``class``, ``words``, ``centre_ns``, ``tolerance`` (a fraction), ``low_ns``,
            ``high_ns`` (the band), ``spread`` and ``pairs``.
        """
        out = []
        for k, name in enumerate(self.classes):
            c, t = float(self.centre[k]), float(self.tolerance[k])
            out.append({"class": name, "words": class_words(name), "centre_ns": c, "tolerance": t,
                        "low_ns": c * (1 - t), "high_ns": c * (1 + t), "spread": float(self.spread[k]),
                        "pairs": int(self.pairs[k])})
        return out

    def summary(self) -> dict[str, Any]:
        """The reference in a few numbers.

        Returns
        -------
        dict
            ``name``, ``cpu_model``, ``cpus`` (count), ``classes``, ``machines``, ``kernel``,
            ``floor``.
        """
        return {"name": self.name, "cpu_model": self.cpu_model, "cpus": len(self.cpus),
                "classes": len(self.classes), "machines": self.machines, "kernel": self.kernel,
                "floor": self.floor}

    def table(self) -> str:
        """One line per class: its centre, tolerance and band.

        Returns
        -------
        str
        """
        rows = [[r["class"], _text.number(r["centre_ns"], " ns"), f"±{100 * r['tolerance']:.1f} %",
                 f"{_text.number(r['low_ns'])}-{_text.number(r['high_ns'], ' ns')}", str(r["pairs"]),
                 r["words"]] for r in self.records()]
        return _text.table(["class", "centre", "tolerance", "within", "pairs", "pairs of"], rows,
                           left=(0, 5))

    def describe(self) -> str:
        """The reference in words: what ``print(ref)`` shows.

        Returns
        -------
        str
        """
        md = self.metadata
        who = self.cpu_model or "CPU model not recorded"
        lines = [f"Reference {self.name or '(unnamed)'}: {who}, {len(self.cpus)} CPUs"]
        if md.get("topology_summary"):
            lines.append(f"Topology: {md['topology_summary']}")
        source = {"topology": "the OS topology", "structure": "the latency structure of the matrix"}
        lines.append(f"Classes from {source.get(str(md.get('class_source')), 'an unknown source')}; kernel "
                     f"{self.kernel}; made from {self.machines} machine(s)"
                     + (f", tolerance at least ±{100 * self.floor:g} %" if self.floor else ""))
        lines += ["", self.table()]
        files = [s.get("file") or s.get("name") for s in md.get("sources", ())]
        if files:
            shown = ", ".join(str(f) for f in files[:5]) + (f" and {len(files) - 5} more" if len(files) > 5
                                                            else "")
            lines += ["", f"From: {shown}"]
        return "\n".join(lines)

    def to_dict(self, *, arrays: bool = True) -> dict[str, Any]:
        """The reference as plain, strict-JSON data; :meth:`from_dict` reads it back.

        Parameters
        ----------
        arrays : bool
            Include ``codes``, the class of every pair (n² numbers); without it the dict says
            what the reference is but cannot be read back.

        Returns
        -------
        dict
            ``kind``, ``name``, ``cpus``, ``classes``, ``records``, ``summary``, ``warnings``,
            ``notes``, ``metadata``, and with ``arrays`` ``codes``.
        """
        d = {"kind": self._KIND, "name": self.name, "cpus": list(self.cpus), "classes": list(self.classes),
             "records": self.records(), "summary": self.summary(), "warnings": list(self.warnings),
             "notes": list(self.notes), "metadata": jsonable(self.metadata)}
        if arrays:
            d["codes"] = self.codes.tolist()
        return jsonable(d)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Reference:
        """A reference from what :meth:`to_dict` gave (with ``arrays=True``).

        Parameters
        ----------
        d : dict
            ``to_dict()`` output.

        Returns
        -------
        Reference

        Raises
        ------
        InputError
            When ``d`` is not a reference's dict, or lacks ``codes``.
        """
        if d.get("kind") != cls._KIND:
            raise InputError("not the dict of a reference (Reference.to_dict())")
        if "codes" not in d:
            raise InputError("this reference dict has no codes (to_dict(arrays=False)); it cannot be "
                             "read back")
        recs = d["records"]
        return cls(d["cpus"], d["classes"], array_from_json(d["codes"], np.int8),
                   [r["centre_ns"] for r in recs], [r["tolerance"] for r in recs],
                   [r["spread"] for r in recs], [r["pairs"] for r in recs],
                   metadata=d.get("metadata"), name=d.get("name", ""))

    def __repr__(self):
        return self._repr(f"{len(self.cpus)} CPUs, {len(self.classes)} classes, {self.machines} machine(s)")

    # -- the file --------------------------------------------------------------------------------------------
    def _to_npz(self):
        header = {"name": self.name, "classes": list(self.classes), "metadata": jsonable(self.metadata),
                  "records": [{k: r[k] for k in ("class", "centre_ns", "tolerance", "spread", "pairs")}
                              for r in self.records()]}
        return header, {"cpus": np.asarray(self.cpus, dtype=np.int64), "codes": self.codes}

    @classmethod
    def _from_npz(cls, header, arrays, path):
        check_arrays(header, arrays, path)
        recs = header["records"]
        return from_file(path, lambda: cls(
            arrays["cpus"].tolist(), header["classes"], arrays["codes"], [r["centre_ns"] for r in recs],
            [r["tolerance"] for r in recs], [r["spread"] for r in recs], [r["pairs"] for r in recs],
            metadata=header.get("metadata"), name=header.get("name") or ""))


_POSITIVE = ("num", 0, _schema._BIG)
_SOURCE = ("map", {"name": _schema.opt(_schema.TEXT), "file": _schema.opt(_schema.TEXT),
                   "hostname": _schema.opt(_schema.TEXT), "date": _schema.opt(_schema.TEXT)}, ())
_HEADER = ("map", {
    "name": _schema.opt(_schema.TEXT), "classes": ("list", _schema.TEXT, 64, 1),
    "records": ("list", ("map", {"class": _schema.TEXT, "centre_ns": _POSITIVE, "tolerance": ("num", 0, 10),
                                 "spread": _POSITIVE, "pairs": _schema.COUNT},
                         ("class", "centre_ns", "tolerance", "spread", "pairs")), 64, 1),
    "metadata": ("map", {**_schema.METADATA_FIELDS, "cpu_count": _schema.opt(_schema.COUNT),
                         "kernel": _schema.opt(_schema.TEXT), "class_source": _schema.opt(_schema.TEXT),
                         "machines": _schema.COUNT, "floor": _schema.opt(("num", 0, 1)),
                         "sources": ("list", _SOURCE, 10**6)}, ()),
}, ("classes", "records"))


def check_arrays(header, arrays, path):
    """A reference file's records and arrays, checked before a Reference is built of them."""
    if [r["class"] for r in header["records"]] != header["classes"]:
        raise InputError(f"{path}: records must name the classes, in order")
    cpus, codes = arrays.get("cpus"), arrays.get("codes")
    if cpus is None or codes is None:
        missing = "cpus" if cpus is None else "codes"
        raise InputError(f"{path}: corrupt or unreadable corelat file (no {missing} member)")
    if cpus.ndim != 1 or cpus.dtype.kind not in "iu":
        raise InputError(f"{path}: cpus must be a list of CPU ids, not {cpus.dtype} of shape {cpus.shape}")
    _schema.check_cpus(cpus, path)
    n = cpus.size
    if codes.dtype.kind not in "iu" or codes.shape != (n, n):
        raise InputError(f"{path}: codes must be ({n}, {n}) integers (pair classes), not {codes.dtype} "
                         f"{codes.shape}")


# The schema of every kind lives in one table (schema.HEADERS), checked by every door into a file;
# the arrays are checked by _from_npz (check_arrays), as a latency file's are.
_schema.HEADERS[Reference._KIND] = _HEADER
register_file_check(Reference._KIND, _schema.check_file)
