"""The verdict: one machine judged against a reference, per latency class, and in one line.

:func:`corelat.verify` makes one. The verdict holds what was found (per class the measured value,
the reference's centre and tolerance; what about the machine's shape differs from the reference's);
whether it is ``ok``, its ``exit_status`` and its one ``line`` follow from those, so a saved verdict
cannot say "ok" of a class that is off.

Exit status (``corelat verify``): :data:`EXIT_OK` every class of the reference is within its
tolerance; :data:`EXIT_OFF` a class is off, or the machine's shape (CPUs, CPU model) is not the
reference's; :data:`EXIT_NOT_JUDGED` a class of the reference has no measured pair (nothing worse
found); 2 stays bad input.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from corelat._core import text as _text
from corelat._core.errors import InputError
from corelat._core.protocol import (
    SavedResult,
    freeze,
    from_file,
    jsonable,
    refuse_assignment,
    register_file_check,
    thaw,
)
from corelat._results import schema as _schema
from corelat._results.reference import class_words

EXIT_OK = 0
EXIT_NOT_JUDGED = 1
EXIT_OFF = 3

WITHIN, OFF, NOT_MEASURED = "within", "off", "not measured"


@dataclass(frozen=True)
class ClassVerdict:
    """One latency class of a verdict.

    Attributes
    ----------
    cls : str
        The class (``"smt"``, ``"l3"``, ``"packages"``, ``"within1"``, ...).
    measured : float
        The judged machine's median over the class's measured pairs, ns (NaN: none measured).
    centre : float
        The reference's centre, ns.
    tolerance : float
        The tolerance applied (a fraction): the reference's, widened for a class measured on
        few pairs.
    pairs : int
        Pairs of the class measured on the judged machine.

    Examples
    --------
    >>> import corelat
    >>> c = corelat.ClassVerdict("l3", measured=37.8, centre=30.0, tolerance=0.06, pairs=64)
    >>> round(c.ratio, 2), c.within, c.status
    (1.26, False, 'off')
    """

    cls: str
    measured: float
    centre: float
    tolerance: float
    pairs: int

    @property
    def ratio(self) -> float:
        """measured / centre (NaN when not measured)."""
        return self.measured / self.centre if math.isfinite(self.measured) else math.nan

    @property
    def within(self) -> bool | None:
        """Whether the class is within its tolerance; None when it was not measured."""
        if not math.isfinite(self.measured):
            return None
        return abs(self.ratio - 1.0) <= self.tolerance

    @property
    def status(self) -> str:
        """``"within"``, ``"off"`` or ``"not measured"``."""
        w = self.within
        return NOT_MEASURED if w is None else WITHIN if w else OFF

    def to_dict(self) -> dict[str, Any]:
        """The class as a JSON-able dict (``class`` for ``cls``), with its ratio and status."""
        d = asdict(self)
        d["class"] = d.pop("cls")
        return jsonable({**d, "ratio": self.ratio, "within": self.within, "status": self.status})

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ClassVerdict:
        """What :meth:`to_dict` gave, back (None measured reads as NaN).

        Parameters
        ----------
        d : dict
            ``to_dict()`` output.

        Returns
        -------
        ClassVerdict
        """
        m = d.get("measured")
        return cls(str(d["class"]), math.nan if m is None else float(m), float(d["centre"]),
                   float(d["tolerance"]), int(d["pairs"]))


def _pct(fraction: float) -> str:
    return f"{100 * fraction:+.0f} %"


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


class Verdict(SavedResult):
    """One machine judged against a reference: ``ok``, ``exit_status``, ``line``, and per class.

    Parameters
    ----------
    node : str
        The judged machine (its host name, else its file's name).
    reference : str
        The reference's name.
    classes : sequence of ClassVerdict or dict
        One per class of the reference.
    findings : sequence of str
        How the machine's shape differs from the reference's (CPUs, CPU model); each makes the
        verdict off.
    metadata : dict, optional
        Where the verdict came from (``file``, ``reference_file``, ``date``, ``elapsed_s``, ...).

    Examples
    --------
    >>> import corelat
    >>> r = corelat.load(corelat.example_files()[0])
    >>> v = corelat.verify(r, corelat.reference(r, name="vm"))
    >>> v.ok, v.exit_status
    (True, 0)
    """

    __slots__ = ("classes", "findings", "metadata", "name", "reference")
    _KIND = "verdict"
    _FIELDS = ("name", "reference", "classes", "findings", "metadata")
    name: str
    reference: str
    classes: tuple[ClassVerdict, ...]
    findings: tuple[str, ...]
    metadata: Mapping[str, Any]

    def __init__(self, node: str, reference: str, classes: Sequence[Any], *, findings: Sequence[str] = (),
                 metadata: Mapping[str, Any] | None = None):
        got = tuple(c if isinstance(c, ClassVerdict) else ClassVerdict.from_dict(c) for c in classes)
        set_ = object.__setattr__
        set_(self, "name", _one_line(node) or "this machine")
        set_(self, "reference", _one_line(reference) or "the reference")
        set_(self, "classes", got)
        set_(self, "findings", tuple(_one_line(f) for f in findings))
        set_(self, "metadata", freeze(thaw(dict(metadata or {}))))

    __setattr__ = refuse_assignment
    __delattr__ = refuse_assignment

    def __iter__(self):
        return iter(self.classes)

    def __len__(self):
        return len(self.classes)

    def __getitem__(self, name: str) -> ClassVerdict:
        for c in self.classes:
            if c.cls == name:
                return c
        raise KeyError(name)

    # -- what follows from the findings ------------------------------------------------------------------
    @property
    def off(self) -> tuple[ClassVerdict, ...]:
        """The classes outside their tolerance."""
        return tuple(c for c in self.classes if c.status == OFF)

    @property
    def not_measured(self) -> tuple[ClassVerdict, ...]:
        """The classes of the reference without a measured pair here."""
        return tuple(c for c in self.classes if c.status == NOT_MEASURED)

    @property
    def exit_status(self) -> int:
        """0 every class within; 3 a class off or the shape differs; 1 a class not measured."""
        if self.findings or self.off:
            return EXIT_OFF
        return EXIT_NOT_JUDGED if self.not_measured or not self.classes else EXIT_OK

    @property
    def ok(self) -> bool:
        """True when every class of the reference is within its tolerance and the shape matches."""
        return self.exit_status == EXIT_OK

    @property
    def line(self) -> str:
        """The verdict in one line, for ``scontrol update state=drain reason=...`` and NHC.

        ``cn007: ok, 5 classes within their tolerance of epyc-7742 (28 s)`` or
        ``cn007: package +26 % vs epyc-7742 (tolerance ±6 %); 4 other classes within``.
        """
        within = [c for c in self.classes if c.status == WITHIN]
        secs = self.metadata.get("elapsed_s")
        took = ""
        if isinstance(secs, (int, float)) and math.isfinite(secs):
            took = f" ({secs:.0f} s)" if secs >= 10 else f" ({secs:.2g} s)"
        if self.ok:
            n = len(within)
            what = f"{n} classes within their tolerance" if n != 1 else "1 class within its tolerance"
            return f"{self.name}: ok, {what} of {self.reference}{took}"
        parts = list(self.findings)
        off = self.off
        if len(off) == 1:
            c = off[0]
            parts.append(f"{c.cls} {_pct(c.ratio - 1)} vs {self.reference} "
                         f"(tolerance ±{100 * c.tolerance:.0f} %)")
        elif off:
            tols = ", ".join(f"±{100 * c.tolerance:.0f} %" for c in off)
            parts.append(", ".join(f"{c.cls} {_pct(c.ratio - 1)}" for c in off)
                         + f" vs {self.reference} (tolerances {tols})")
        missing = self.not_measured
        if missing:
            parts.append(f"{', '.join(c.cls for c in missing)} not measured")
        if not self.classes:
            parts.append(f"no class of {self.reference} could be judged")
        n = len(within)
        if n and off:
            parts.append(f"{n} other class{'es' if n != 1 else ''} within")
        elif n:
            parts.append(f"{n} class{'es' if n != 1 else ''} within {'their' if n != 1 else 'its'} tolerance "
                         f"of {self.reference}")
        elif not off:
            parts[-1] += f" (vs {self.reference})"
        return f"{self.name}: " + "; ".join(parts)

    # -- the verbs -----------------------------------------------------------------------------------------
    def records(self) -> list[dict[str, Any]]:
        """One dict per class.

        Returns
        -------
        list of dict
            ``class``, ``measured``, ``centre``, ``tolerance``, ``pairs``, ``ratio``, ``within``
            (None: not measured) and ``status``.
        """
        return [c.to_dict() for c in self.classes]

    def summary(self) -> dict[str, Any]:
        """The verdict in a few fields.

        Returns
        -------
        dict
            ``node``, ``reference``, ``ok``, ``exit_status``, ``line``, ``within``, ``off``,
            ``not_measured`` (counts) and ``findings``.
        """
        return {"node": self.name, "reference": self.reference, "ok": self.ok,
                "exit_status": self.exit_status, "line": self.line,
                "within": sum(c.status == WITHIN for c in self.classes),
                "off": len(self.off), "not_measured": len(self.not_measured), "findings": list(self.findings)}

    def table(self) -> str:
        """One line per class: measured, the reference's centre and tolerance, ratio, status.

        Returns
        -------
        str
        """
        rows = [[c.cls, _text.number(c.measured, " ns"), _text.number(c.centre, " ns"),
                 f"±{100 * c.tolerance:.1f} %", _text.ratio(c.ratio), str(c.pairs), c.status]
                for c in self.classes]
        return _text.table(["class", "measured", "reference", "tolerance", "ratio", "pairs", "status"], rows,
                           left=(0, 6))

    def describe(self) -> str:
        """The verdict in words: the line, the table of classes, the shape's findings.

        Returns
        -------
        str
        """
        lines = [self.line, ""]
        if self.classes:
            lines.append(self.table())
            lines += [f"  {c.cls}: {class_words(c.cls)}" for c in self.off + self.not_measured]
        for f in self.findings:
            lines.append(f"* {f}")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines).rstrip()

    def to_dict(self, *, arrays: bool = True) -> dict[str, Any]:
        """The verdict as plain, strict-JSON data; :meth:`from_dict` reads it back.

        Parameters
        ----------
        arrays : bool
            Accepted as every result kind accepts it; a verdict holds no arrays.

        Returns
        -------
        dict
            ``kind``, ``name`` and ``node`` (the judged machine), ``reference``, ``ok``,
            ``exit_status``, ``line``, ``classes`` (:meth:`records`), ``findings``, ``warnings``,
            ``notes``, ``metadata``.
        """
        return jsonable({"kind": self._KIND, "name": self.name, "node": self.name,
                         "reference": self.reference, "ok": self.ok,
                         "exit_status": self.exit_status, "line": self.line, "classes": self.records(),
                         "findings": list(self.findings), "warnings": list(self.warnings),
                         "notes": list(self.notes), "metadata": self.metadata})

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Verdict:
        """A verdict from what :meth:`to_dict` gave.

        Parameters
        ----------
        d : dict
            ``to_dict()`` output.

        Returns
        -------
        Verdict

        Raises
        ------
        InputError
            When ``d`` is not a verdict's dict.
        """
        if d.get("kind") != cls._KIND:
            raise InputError("not the dict of a verdict (Verdict.to_dict())")
        return cls(d["node"], d["reference"], d["classes"], findings=d.get("findings", ()),
                   metadata=d.get("metadata"))

    def __repr__(self):
        return self._repr(f"{'ok' if self.ok else 'off'} against {self.reference!r}, exit {self.exit_status}")

    def _to_npz(self):
        header = {"node": self.name, "reference": self.reference, "classes": self.records(),
                  "findings": list(self.findings), "metadata": jsonable(self.metadata)}
        return jsonable(header), {}

    @classmethod
    def _from_npz(cls, header, arrays, path):
        return from_file(path, lambda: cls(header["node"], header["reference"], header["classes"],
                                           findings=header["findings"], metadata=header.get("metadata")))


_MAYBE_NUMBER = _schema.opt(_schema.NUMBER)
_HEADER = ("map", {
    "node": _schema.TEXT, "reference": _schema.TEXT, "findings": _schema.TEXTS,
    "classes": ("list", ("map", {"class": _schema.TEXT, "measured": _MAYBE_NUMBER,
                                 "centre": ("num", 0, _schema._BIG), "tolerance": ("num", 0, 10),
                                 "pairs": _schema.COUNT}, ("class", "centre", "tolerance", "pairs")), 64),
    "metadata": ("map", {**_schema.METADATA_FIELDS, "elapsed_s": _MAYBE_NUMBER,
                         "file": _schema.opt(_schema.TEXT), "reference_file": _schema.opt(_schema.TEXT)}, ()),
}, ("node", "reference", "classes", "findings"))


# The schema of every kind lives in one table (schema.HEADERS), checked by every door into a file.
_schema.HEADERS[Verdict._KIND] = _HEADER
register_file_check(Verdict._KIND, _schema.check_file)
