"""Crafted result files for issue 24 item 11: one valid file per kind, then its JSON header or its
arrays changed at one place (a field's type or range, a field removed or added, an array of another
shape or dtype). Shared by ``tests/test_hostile_schema.py`` (hypothesis draws the changes) and
``benchmarks/reliability.py`` (a seeded random stream of them).

Loading a crafted file must give a result or raise :class:`corelat.InputError`; anything else is an
"internal error" of the command line.
"""

import contextlib
import copy
import io
import math
import os

import numpy as np

import corelat
from corelat._core import npz as _npz
from corelat._core.protocol import thaw
from corelat._fleet import synth as _synth
from corelat.cli import main as cli_main
from corelat._measure.locks import summarise

#: Values a field is replaced with: every JSON type, edges of the ranges, and what json.loads makes of
#: 1e999 (an infinite float, which no header check refused).
HOSTILE = [None, True, False, 0, 1, -1, 2**63, -(2**70), 10**400, 0.5, -1e-9, 1e308, math.inf, -math.inf,
           "", "x", "\x1b]0;t\x07", "-1", "nan", [], [1], [None], ["x", 1], {}, {"a": 1}, {"": None},
           [[[]]], {"cpu": {}}]
#: How arrays are replaced: another dtype, shape or size.
ARRAY_CHANGES = ("float", "int8", "bool", "complex", "scalar", "empty", "flat", "transpose", "extra-dim",
                 "negative", "huge", "nan")


def _latency():
    rng = np.random.default_rng(1)
    s = rng.lognormal(3, 0.3, size=(3, 3, 8))
    s[np.arange(3), np.arange(3)] = np.nan
    topo = corelat.Topology.from_dict(corelat.topology().to_dict())
    return corelat.LatencyResult(cpus=(4, 0, 2), kernel="cas", samples=s, name="lat",
                                 metadata={"parameters": {"samples": 8}, "warnings": ["w"], "notes": ["n"],
                                           "timer": {"name": "tsc", "frequency_hz": 2e9},
                                           "topology": topo.to_dict() if len(topo.cpus) < 64 else None})


def _smt():
    non = np.full((2, 4), 50.0)
    non[:, 1] = np.nan
    return corelat.SMTResult(cpus=(0, 1, 2, 3), kernel="rw", pairs=np.array([[0, 2], [1, 3]]),
                             partners=np.array([1, -1]), partner_levels=("l3", ""),
                             sibling_samples=np.full((2, 4), 5.0), nonsibling_samples=non,
                             loops=("alu", "mem"), alone=np.full((2, 2, 2), 2e9),
                             together=np.full((2, 2, 2), 1e9), metadata={"warnings": ["dropped"]}, name="smt")


def _locks():
    raw = {"calls": [[100, 100], [20, 20]], "ticks": [[2000] * 2, [2000] * 2],
           "sermin": [[60, 60], [90, 90]], "sercalls": [[5, 5], [7, 7]], "counter": [0, 52]}
    data, threads = summarise(["baseline", "lock-pthread-mutex"], [0, 1], raw, 2.0, 50.0)
    return corelat.LockResult(cpus=(0, 1), shared=True, duration=1.0, data=data, threads=threads,
                              metadata={"timer": {"name": "tsc"}, "timer_mhz": 2000.0}, name="locks")


def _placement():
    a = _latency()
    found = np.where(np.eye(3, dtype=bool), -1, 1)
    b = corelat.LatencyResult(cpus=a.cpus, kernel=a.kernel, samples=a.samples * 1.5,
                              metadata=thaw(a.metadata), name=a.name, extras={"home_node": found})
    return corelat.PlacementResult(["initiator", "node:1"], [a, b], name="homes")


def _fleet():
    m = np.array([[0, 8, 40, 40], [8, 0, 40, 40], [40, 40, 0, 8], [40, 40, 8, 0]], dtype=float)
    base = corelat.LatencyResult.from_matrix(m, name="base")
    nodes = _synth.copies(base, 4, seed=1, slow=(2, "cores", 1.5),
                          metadata=lambda i: {"governor": "powersave" if i == 2 else "performance"})
    return corelat.fleet(nodes)


def _check():
    items = [{"name": "governor", "status": "warn", "found": "powersave", "why": "clock changes",
              "value": ["powersave", "performance"]},
             {"name": "smt", "status": "ok", "found": "on", "why": "", "value": {"siblings": 2}},
             {"name": "skew", "status": "unknown", "found": "not measured", "why": "", "value": None}]
    return corelat.CheckReport(items, metadata={"hostname": "h"}, name="check")


BUILDERS = {"latency": _latency, "locks": _locks, "smt": _smt, "placement": _placement, "fleet": _fleet,
            "check": _check}


def seeds(folder):
    """``{kind: (header, arrays)}`` of one valid file per kind (written under ``folder``)."""
    out = {}
    for kind, build in BUILDERS.items():
        path = os.path.join(folder, f"seed-{kind}.npz")
        build().save(path)
        out[kind] = _npz.read(path)
    return out


def _places(obj, at=()):
    """Every place in a JSON tree: paths of keys and indices."""
    yield at
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _places(v, (*at, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _places(v, (*at, i))


def places(header):
    """The places of a header a change may target (not the container's own format and version)."""
    return [p for p in _places(header) if p and p[0] not in ("format", "version")]


def change_header(header, place, op, value):
    """A copy of ``header`` with ``value`` put at ``place`` (``op`` "set"), the place removed ("del"),
    or ``value`` added beside it under a new key or index ("add")."""
    h = copy.deepcopy(header)
    parent = h
    for k in place[:-1]:
        parent = parent[k]
    last = place[-1]
    if op == "set":
        parent[last] = copy.deepcopy(value)
    elif op == "del":
        del parent[last]
    elif isinstance(parent, dict):
        parent[f"{last}_x"] = copy.deepcopy(value)
    else:
        parent.append(copy.deepcopy(value))
    return h


_ARRAY_CHANGE = {
    "float": lambda a: a.astype(np.float64) + 0.5,
    "int8": lambda a: np.zeros(a.shape, dtype=np.int8),
    "bool": lambda a: np.ones(a.shape, dtype=bool),
    "complex": lambda a: a.astype(np.complex128),
    "scalar": lambda a: np.array(7),
    "empty": lambda a: np.zeros((0,) * max(a.ndim, 1)),
    "flat": lambda a: a.reshape(-1),
    "transpose": lambda a: a.T if a.ndim > 1 else a[::-1],
    "extra-dim": lambda a: a[..., None],
    "negative": lambda a: -np.abs(a.astype(np.float64)) - 1,
    "huge": lambda a: np.full(a.shape, 1e300),
    "nan": lambda a: np.full(a.shape, np.nan),
}


def change_array(a, how):
    """``a`` of another dtype, shape or content (see :data:`ARRAY_CHANGES`)."""
    a = np.asarray(a)
    if a.dtype.kind not in "biuf" and how in ("float", "complex", "negative", "huge"):
        return np.zeros(a.shape)  # text arrays (names): numbers in their place
    return _ARRAY_CHANGE[how](a)


def write(path, header, arrays):
    """A corelat file holding exactly ``header`` (its format fields included) and ``arrays``."""
    _npz.write(path, header.get("kind", "latency"), header, arrays)


def write_text_header(path, text, arrays):
    """A corelat file whose header is ``text`` as it is (JSON that ``json.dumps`` never writes: 1e999)."""
    members = {"header": np.array(text), **{k: np.asarray(v) for k, v in arrays.items()}}
    with open(path, "wb") as f:
        _npz._write_archive(f, members)


#: Every door a file comes in by: ``corelat.load`` and the ``load`` of each kind that saves.
DOORS = {"corelat.load": corelat.load,
         **{f"{cls.__name__}.load": cls.load
            for cls in (corelat.LatencyResult, corelat.SMTResult, corelat.LockResult, corelat.PlacementResult,
                        corelat.FleetResult, corelat.CheckReport, corelat.Topology)}}


def _door(load, path):
    """``(what happened, the result)``: "accepted", "refused" (InputError) or an exception's name."""
    try:
        return "accepted", load(path)
    except corelat.InputError:
        return "refused", None
    except Exception as e:  # noqa: BLE001 - every other exception is what the fuzzing looks for
        return type(e).__name__, None


def doors(path):
    """What each door of :data:`DOORS` makes of ``path``: "ok" when every door gives a result or
    raises InputError and the kind's own door agrees with ``corelat.load`` (refuses what it refuses,
    else gives an equal result); else what went wrong, door by door."""
    ref, result = _door(corelat.load, path)
    bad = [] if ref in ("accepted", "refused") else [f"corelat.load: {ref}"]
    for name, load in DOORS.items():
        if load is corelat.load:
            continue
        got, r = _door(load, path)
        own = result is not None and type(result) is getattr(load, "__self__", None)
        if got not in ("accepted", "refused"):
            bad.append(f"{name}: {got}")
        elif own and (got != "accepted" or r != result):
            bad.append(f"{name}: {got} a file corelat.load accepted")
        elif got == "accepted" and not own:
            bad.append(f"{name}: accepted a file corelat.load {ref}")
    return "; ".join(bad) or "ok"


def outcome(path):
    """"ok" when every door (:func:`doors`) gives a result or raises InputError, agreeing with
    ``corelat.load``, and ``corelat report`` then ends with 0 or 2 without an internal error; else what
    went wrong."""
    problem = doors(path)
    if problem != "ok":
        return problem
    if _door(corelat.load, path)[0] == "refused":
        return "ok"
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli_main(["report", str(path)])
    if status in (0, 2) and "internal error" not in err.getvalue():
        return "ok"
    return "report: " + (err.getvalue().strip().splitlines() or [f"exit {status}"])[-1][:160]
