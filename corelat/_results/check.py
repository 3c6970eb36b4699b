"""The check report: what on a machine can distort a latency measurement, item by item."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from corelat._core.errors import InputError
from corelat._core.protocol import SavedResult, freeze, from_file, jsonable, refuse_assignment, thaw
from corelat._system.conditions import INFO, OK, UNKNOWN, WARN, CheckItem

_MARK = {OK: "ok", INFO: "--", WARN: "!!", UNKNOWN: "??"}


class CheckReport(SavedResult):
    """What :func:`corelat.check` found: a sequence of :class:`CheckItem` (iterate, index, ``len``).

    ``warnings`` are the items likely to distort measurements, ``notes`` those worth knowing.

    Parameters
    ----------
    items : iterable of CheckItem or dict
        The findings (dicts as :meth:`records` gives them are accepted).
    metadata : dict, optional
        Where and how the report was made.
    name : str
        A label (the host name by default).

    Attributes
    ----------
    items : tuple of CheckItem
        The findings, in the order they were checked.
    metadata : Mapping
        Read-only mapping: where and how the report was made.
    name : str
        A label.

    A report is a value: assigning an attribute raises :class:`dataclasses.FrozenInstanceError`.

    Examples
    --------
    >>> import corelat
    >>> report = corelat.check(interval=0.01, measure_skew=False)
    >>> len(report) > 0, all(isinstance(item, corelat.CheckItem) for item in report)
    (True, True)
    >>> sorted(report.summary())
    ['info', 'matters', 'ok', 'unknown', 'warn']
    """

    __slots__ = ("items", "metadata", "name")
    _KIND = "check"
    _FIELDS = ("items", "metadata", "name")
    items: tuple[CheckItem, ...]
    metadata: Mapping[str, Any]
    name: str

    def __init__(self, items, *, metadata=None, name=""):
        # Values as JSON has them (lists, not tuples or sets), so a saved report reads back equal.
        items = (i.to_dict() if isinstance(i, CheckItem) else dict(i) for i in items)
        set_ = object.__setattr__
        set_(self, "items", tuple(CheckItem(**{**i, "value": jsonable(i.get("value"))}) for i in items))
        set_(self, "metadata", freeze(thaw(dict(metadata or {}))))
        set_(self, "name", str(name))

    __setattr__ = refuse_assignment
    __delattr__ = refuse_assignment

    def __iter__(self):
        return iter(self.items)

    def __len__(self):
        return len(self.items)

    def __getitem__(self, index):
        return self.items[index]

    @property
    def warnings(self) -> tuple[str, ...]:
        """``"name: found"`` of every item likely to distort measurements."""
        return tuple(f"{i.name}: {i.found}" for i in self.items if i.status == WARN)

    @property
    def notes(self) -> tuple[str, ...]:
        """``"name: found"`` of every item worth knowing."""
        return tuple(f"{i.name}: {i.found}" for i in self.items if i.status == INFO)

    def records(self) -> list[dict[str, Any]]:
        """One dict per item.

        Returns
        -------
        list of dict
            ``name``, ``status``, ``found``, ``why``, ``value``.
        """
        return [i.to_dict() for i in self.items]

    def summary(self) -> dict[str, Any]:
        """How many items have each status.

        Returns
        -------
        dict
            A count per status (``ok``, ``info``, ``warn``, ``unknown``), and ``matters``: the
            names of the items to fix first.
        """
        out: dict[str, Any] = {st: sum(i.status == st for i in self.items)
                               for st in (OK, INFO, WARN, UNKNOWN)}
        out["matters"] = [i.name for i in self.items if i.matters]
        return out

    def describe(self) -> str:
        """The report in words: what ``print(report)`` shows (``table()``).

        Returns
        -------
        str
        """
        return self.table()

    def table(self) -> str:
        """The report as text.

        Returns
        -------
        str
            One line per item with its mark, then why it matters (``str(report)``).
        """
        width = max([len(i.name) for i in self.items] + [1])
        lines = ["corelat check: what can distort latency measurements here",
                 "(ok: fine, --: worth knowing, !!: likely to distort results, ??: could not tell)", ""]
        for i in self.items:
            lines.append(f"{_MARK[i.status]} {i.name:<{width}}  {i.found}")
            lines.append(f"   {'':<{width}}  {i.why}")
        bad = [i.name for i in self.items if i.matters]
        lines.append("")
        lines.append(f"{len(bad)} item(s) likely to distort results: {', '.join(bad)}" if bad
                     else "nothing found that is likely to distort results")
        return "\n".join(lines)

    def to_dict(self, *, arrays: bool = True) -> dict[str, Any]:
        """The report as plain, strict-JSON data; :meth:`from_dict` reads it back.

        Parameters
        ----------
        arrays : bool
            Accepted as every result kind accepts it; a report holds no arrays, so the dict is
            the same either way.

        Returns
        -------
        dict
            ``kind``, ``name``, ``summary``, ``records``, ``warnings``, ``notes``, ``metadata``.
        """
        return jsonable({"kind": self._KIND, "name": self.name, "summary": self.summary(),
                         "records": self.records(), "warnings": list(self.warnings),
                         "notes": list(self.notes), "metadata": self.metadata})

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CheckReport:
        """A report from what :meth:`to_dict` gave, after a trip through JSON or not.

        Parameters
        ----------
        d : dict
            ``to_dict()`` output.

        Returns
        -------
        CheckReport

        Raises
        ------
        InputError
            When ``d`` is not a check report's dict.
        """
        if not isinstance(d, Mapping) or d.get("kind") != cls._KIND:
            raise InputError("not the dict of a check report (CheckReport.to_dict())")
        return cls(d["records"], metadata=d.get("metadata"), name=d.get("name", ""))

    def __repr__(self):
        s = self.summary()
        return self._repr(f"{len(self)} items, {s[WARN]} likely to distort results")

    def _to_npz(self):
        header = {"name": self.name, "metadata": jsonable(self.metadata), "records": jsonable(self.records())}
        return header, {}

    @classmethod
    def _from_npz(cls, header, arrays, path):
        return from_file(path, lambda: cls(header["records"], metadata=header.get("metadata"),
                                           name=header["name"]))
