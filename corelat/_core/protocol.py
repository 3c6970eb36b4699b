"""The shape every corelat result shares.

Every result a user gets (:class:`~corelat.LatencyResult`, :class:`~corelat.SMTResult`,
:class:`~corelat.LockResult`, :class:`~corelat.Topology`, :class:`~corelat.Comparison`,
:class:`~corelat.CheckReport`, ...) derives from :class:`Result`: it has ``name``, ``metadata``,
``warnings`` and ``notes``; ``to_dict()`` (JSON-able), ``records()`` (one dict per row), ``table()``
(text for a terminal), ``describe()`` (the text report, what ``print(result)`` shows) and
``summary()`` (a small dict); it compares by value (arrays with NaN compare equal where both are
NaN) and is unhashable, since it holds arrays.

Kinds that hold measurements (and the topology they were made on) derive from
:class:`SavedResult` as well: they ``save(path)`` to a corelat ``.npz`` file that
:func:`corelat.load` (or the class's ``load``) reads back as an equal result, and ``from_dict()``
rebuilds one from ``to_dict()``. Views derived from other results (a structure, a comparison) are
plain :class:`Result` objects: they have no ``save``, rather than one that always raises.
See ``docs/results.md``.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import sys
import types
import warnings
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import numpy as np

from corelat._core import npz as _npz
from corelat._core.errors import InputError, InputTypeError

if TYPE_CHECKING:  # annotations only (typing_extensions: for Python < 3.11; mypy brings it)
    from typing_extensions import Self

    from corelat._core.types import Path


_F = TypeVar("_F", bound=Callable[..., Any])


def deprecated(message: str) -> Callable[[_F], _F]:
    """A method kept one release under an old name: each call warns once (DeprecationWarning, at the
    caller's line) with ``message``, which names the new name, then does what the old name did."""

    def wrap(fn: _F) -> _F:
        @functools.wraps(fn)
        def old(*args, **kwargs):
            warnings.warn(message, DeprecationWarning, stacklevel=_caller())
            return fn(*args, **kwargs)

        return old  # type: ignore[return-value]

    return wrap


def _caller():
    """The ``stacklevel`` of a warning raised in a wrapper of this module at the line that called
    it: the first frame outside this module (``from_dict`` is wrapped twice)."""
    frame, level = sys._getframe(2), 2
    while frame is not None and frame.f_code.co_filename == __file__:
        frame, level = frame.f_back, level + 1
    return level


def keyword_options(*was_positional: str) -> Callable[[_F], _F]:
    """A method whose options are keyword-only now, still taking ``was_positional`` (the options
    it took by position before, in that order) by position for one release: such a call warns once
    (DeprecationWarning) naming the keywords to write. ``inspect.signature`` (and ``help()``) show
    the keyword-only signature."""

    def wrap(fn: _F) -> _F:
        params = list(inspect.signature(fn).parameters.values())
        positional = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
        if not set(was_positional) <= {p.name for p in params if p.kind is p.KEYWORD_ONLY}:
            raise TypeError(f"{fn.__qualname__}: {was_positional} must be keyword-only options")
        where = fn.__qualname__

        @functools.wraps(fn)
        def call(*args, **kwargs):
            extra = args[positional:]
            if extra:
                if len(extra) > len(was_positional):
                    raise TypeError(f"{where}() takes at most {positional + len(was_positional)} "
                                    f"positional arguments ({len(args)} given)")
                names = was_positional[:len(extra)]
                twice = [n for n in names if n in kwargs]
                if twice:
                    raise TypeError(f"{where}() got multiple values for argument {twice[0]!r}")
                shown = ", ".join(f"{n}=" for n in names)
                warnings.warn(f"{where}(): pass {shown} by keyword; options by position are deprecated "
                              "and stop working in the next release", DeprecationWarning,
                              stacklevel=_caller())
                kwargs.update(zip(names, extra))
                args = args[:positional]
            return fn(*args, **kwargs)

        return call  # type: ignore[return-value]

    return wrap


def thaw(obj):
    """A plain, JSON-serialisable copy of frozen metadata."""
    if isinstance(obj, (dict, types.MappingProxyType)):
        return {k: thaw(v) for k, v in obj.items()}
    if isinstance(obj, (tuple, list)):
        return [thaw(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def same(a, b):
    """Value equality for result fields: arrays (NaN equal to NaN), mappings, sequences, scalars."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or a.dtype.names != b.dtype.names:
            return False
        if a.dtype.names:
            return all(same(a[f], b[f]) for f in a.dtype.names)
        if a.dtype.kind in "fc" and b.dtype.kind in "fc":
            return bool(np.array_equal(a, b, equal_nan=True))
        return bool(np.array_equal(a, b))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b)


def jsonable(obj):
    """A JSON-serialisable copy: mappings to dicts, sequences and arrays to lists, NaN/inf to None."""
    if isinstance(obj, (dict, types.MappingProxyType)):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, (tuple, list)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, (set, frozenset)):
        return sorted(jsonable(v) for v in obj)
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def frozen_array(a, dtype=None):
    """A read-only copy of ``a``; ``a`` itself when it is already a read-only array of that type
    that owns its data (another result's, or one just read from a file): a copy of a 4,000-CPU
    matrix is 128 MB, and results share theirs."""
    if isinstance(a, np.ndarray) and (dtype is None or a.dtype == np.dtype(dtype)) and _immutable(a):
        return a
    a = np.array(a, dtype=dtype, copy=True)
    a.setflags(write=False)
    return a


def _immutable(a):
    """True when nothing can write ``a``'s values: it and every array it views are read-only,
    down to the owner of the memory (an array, or the bytes a file was read into)."""
    while isinstance(a, np.ndarray):
        if a.flags.writeable:
            return False
        if a.flags.owndata:
            return True
        a = a.base
    return isinstance(a, bytes)


def freeze(obj):
    """Read-only JSON-like data: dicts become read-only mapping views, lists tuples."""
    if isinstance(obj, dict):
        return types.MappingProxyType({k: freeze(v) for k, v in obj.items()})
    if isinstance(obj, list):
        return tuple(freeze(v) for v in obj)
    return obj


def array_from_json(values, dtype=np.float64):
    """The array :func:`jsonable` wrote as nested lists (None back to NaN for float arrays)."""
    if np.dtype(dtype).kind in "fc":
        values = _none_to_nan(values)
    return np.array(values, dtype=dtype)


def _none_to_nan(v):
    if isinstance(v, list):
        return [_none_to_nan(x) for x in v]
    return np.nan if v is None else v


def refuse_assignment(self, name, value=None):
    """``__setattr__`` / ``__delattr__`` of a result that is not a frozen dataclass but as immutable."""
    raise dataclasses.FrozenInstanceError(
        f"cannot assign to field {name!r}: a {type(self).__name__} is a value")


def from_file(path, build):
    """``build()``, with a missing member or inconsistent content reported as an InputError on ``path``."""
    try:
        return build()
    except KeyError as e:
        raise InputError(f"{path}: corrupt or unreadable corelat file (no {e} member)") from None
    except (ValueError, TypeError, IndexError) as e:
        raise InputError(f"{path}: inconsistent corelat file ({e})") from None


#: kind -> ``check(header, arrays, path)``, raising InputError: what a file of that kind must hold beyond
#: the container's checks. The schema lives a layer up (``corelat._results.schema`` registers it when
#: the result classes are imported), so that every door into a file, :func:`corelat.load` and each
#: kind's ``load``, runs the same checks through :meth:`SavedResult._from_file`.
_FILE_CHECKS: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any], Any], None]] = {}

#: What a reader of a malformed dict or file can raise before a check names the problem.
_MALFORMED = (KeyError, ValueError, TypeError, IndexError, AttributeError, OverflowError)


def register_file_check(kind, check):
    """Make ``check(header, arrays, path)`` run on every file of ``kind``, whichever door reads it."""
    _FILE_CHECKS[kind] = check


def file_checks():
    """The kinds whose files have a registered check (a copy)."""
    return dict(_FILE_CHECKS)


def _dict_reader(from_dict, name):
    """``from_dict`` that answers a dict it cannot read with an InputError, not the raw KeyError,
    TypeError, OverflowError ... of the field it tripped on."""

    @functools.wraps(from_dict)
    def read(cls, d, *args, **kwargs):
        if not isinstance(d, Mapping):
            raise InputTypeError(f"{name}.from_dict() reads what to_dict() gives (a dict), "
                                 f"not {type(d).__name__}")
        try:
            return from_dict(cls, d, *args, **kwargs)
        except InputError:
            raise
        except _MALFORMED as e:
            what = f"not a {name} dict, as to_dict() gives: {type(e).__name__}: {e}"
            raise InputError(what[:2000]) from None

    return classmethod(read)


def prefixed(labels, results, field, template="{label}: {text}"):
    """Every part's ``warnings`` or ``notes`` (``field``), each prefixed with the part's label: the
    texts of a result made of other results (a comparison, a placement run)."""
    return tuple(template.format(label=label, text=text)
                 for label, r in zip(labels, results) for text in getattr(r, field))


class Result:
    """Base of every result class: value equality, the text of ``print()``, warnings and notes.

    A subclass sets ``_FIELDS`` (what equality compares) and implements ``describe()`` (the text
    report, what ``str()`` gives), ``table()``, ``records()``, ``summary()`` and ``to_dict()``.
    """

    __slots__ = ()
    _FIELDS: ClassVar[tuple[str, ...]] = ()
    __hash__ = None  # type: ignore[assignment]  # holds arrays: a value, but not hashable

    if TYPE_CHECKING:  # what every subclass provides (a field, a slot or a property; methods)
        @property
        def metadata(self) -> Mapping[str, Any]: ...

        def describe(self) -> str: ...

    @property
    def warnings(self) -> tuple[str, ...]:
        """Human-readable warnings about this result (tuple of str)."""
        return tuple(self.metadata.get("warnings", ()))

    @property
    def notes(self) -> tuple[str, ...]:
        """What is worth knowing about this result but is no problem (tuple of str)."""
        return tuple(self.metadata.get("notes", ()))

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return all(same(getattr(self, f), getattr(other, f)) for f in self._FIELDS)

    def __str__(self):
        return self.describe()

    def _repr(self, details):
        name = getattr(self, "name", "")
        return f"<{type(self).__name__} {name!r}: {details}>"


class SavedResult(Result):
    """A result that keeps itself: ``save``, ``load``, ``from_dict``.

    A subclass sets ``_KIND`` (the ``kind`` of its files) and implements ``_to_npz()``,
    ``_from_npz(header, arrays, path)`` and ``from_dict(d)`` (which reads what ``to_dict()`` gives).
    """

    __slots__ = ()
    _KIND: ClassVar[str]
    __hash__ = None  # as Result's: holds arrays

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # from_dict is a public door as load is: what it cannot read is an InputError, for every kind.
        own = cls.__dict__.get("from_dict")
        if isinstance(own, classmethod):
            cls.from_dict = _dict_reader(own.__func__, cls.__name__)

    if TYPE_CHECKING:
        def _to_npz(self) -> tuple[dict[str, Any], dict[str, Any]]: ...

    def save(self, path: Path) -> None:
        """Write the result to a file (atomically): a ``.npz`` of plain arrays plus a JSON header, no pickle.

        :func:`corelat.load` (or this class's ``load``) reads it back as an equal result.

        Parameters
        ----------
        path : str or os.PathLike
            The file to write.

        Raises
        ------
        SaveError
            When the file cannot be written (no such folder, no permission, a full disk, a name that
            is a folder or a device); a file already there is left as it was.

        Examples
        --------
        >>> import os, tempfile, corelat
        >>> r = corelat.load(corelat.example_files()[0])
        >>> path = os.path.join(tempfile.mkdtemp(), "r.npz")
        >>> r.save(path)
        >>> corelat.load(path) == r
        True
        """
        header, arrays = self._to_npz()
        _npz.write(path, self._KIND, header, arrays)

    @classmethod
    def load(cls, path: Path) -> Self:
        """Read a result of this kind written by :meth:`save`.

        Parameters
        ----------
        path : str or os.PathLike
            A corelat ``.npz`` file.

        Returns
        -------
        Result
            An instance of the class it is called on.

        Raises
        ------
        InputError
            For a missing or corrupt file, or a file holding another kind of result
            (:func:`corelat.load` reads any kind).

        Examples
        --------
        >>> import corelat
        >>> corelat.LatencyResult.load(corelat.example_files()[0]).kernel
        'cas'
        """
        header, arrays = _npz.read(path)
        if header["kind"] != cls._KIND:
            raise InputError(f"{path}: holds a {header['kind']!r} result, not a {cls._KIND!r} result")
        return cls._from_file(header, arrays, path)

    @classmethod
    def _from_file(cls, header: Mapping[str, Any], arrays: Mapping[str, Any], path: Any) -> Self:
        """The result a file's ``header`` and ``arrays`` hold, after its kind's registered checks: the
        one path from a file to a result, whichever door (:func:`corelat.load`, ``Kind.load``) it took."""
        check = _FILE_CHECKS.get(header.get("kind", cls._KIND))
        if check is not None:
            check(header, arrays, path)
        return cls._from_npz(header, arrays, path)

    if TYPE_CHECKING:
        @classmethod
        def _from_npz(cls, header: Mapping[str, Any], arrays: Mapping[str, Any], path: Any) -> Self: ...

        @classmethod
        def from_dict(cls, d: Mapping[str, Any]) -> Self: ...
