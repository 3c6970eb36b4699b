"""What a latency result file must hold: its header fields and arrays, checked before use.

:mod:`corelat._core.npz` has already bounded the file, its members' sizes and dtypes and the JSON
header's size and nesting; here a latency result's own schema is checked: the header fields corelat
reads have the JSON types it expects, names are short, and the arrays are consistent and make sense
(latencies finite and not negative, CPU ids distinct and not negative), as the CSV and c2clat
readers require of text files. Every problem raises :class:`~corelat._core.errors.InputError` naming the
file and what is wrong.
"""

import math
import re

import numpy as np

from corelat._core.errors import InputError
from corelat._core import npz as _npz
from corelat._core.npz import short
from corelat._core.protocol import register_file_check, thaw
from corelat._results import locks as _locks
from corelat._results import locks_names as _lock_names
from corelat._system.topology import Topology

#: The ``.npz`` member holding the median per pair, beside the raw samples it is derived from.
MEDIAN_MEMBER = "median"


def npz_parts(result):
    """``(header, arrays)`` of a latency result's ``.npz`` file (what ``check_header`` and
    ``check_arrays`` read back)."""
    header = {
        "kernel": result.kernel,
        "name": result.name,
        "metadata": thaw(result.metadata),
        "extras": sorted(result.extras),
    }
    # What load() would refuse is not written: a file that cannot be read back keeps nothing.
    problem = latency_problem(np.asarray(result.samples), latency_floor(header))
    if problem:
        raise InputError(f"this result cannot be saved: samples: {problem} (a file of it could not be "
                         "loaded back)")
    arrays = {"cpus": np.asarray(result.cpus, dtype=np.int64), "samples": result.samples,
              "flags": result.flags}
    if result.samples.shape[2] > 1:
        # Derived, for readers that need no samples: a fleet's analysis reads this small member
        # and leaves the samples compressed. Loading ignores it (the samples say the median).
        arrays[MEDIAN_MEMBER] = result.median
    for k, v in result.extras.items():
        arrays["extra_" + k] = v
    return header, arrays

MAX_CPUS = 65536  #: far above any machine (Linux's NR_CPUS tops out at 8192)
MAX_NAME_CHARS = 1024  #: result names and kernel names are labels, not documents
MAX_EXTRAS = 64
#: A one-way sample is the receiver's timer minus the sender's, less the timer's own cost: on timers
#: synchronized to within tens of ns the fastest pairs can read a little below zero.
ONEWAY_SLACK_NS = 100.0
_EXTRA_NAME = re.compile(r"[A-Za-z0-9_]{1,64}\Z")

_NUMBER = (int, float)
#: Metadata keys corelat reads, and the JSON types they must have when present.
_METADATA_TYPES = {
    "warnings": list, "notes": list, "parameters": dict, "sampling": dict, "timer": dict,
    "order": dict, "topology": dict, "symmetric": bool, "value_only": bool,
    "topology_summary": str, "cpu_model": str, "hostname": str, "date": str, "source": str,
    "kernel_description": str, "statistic": str, "note": str, "path": str,
    "cpu_selection": dict,
}
#: ... and inside those mappings, values that are printed as numbers or strings.
_NESTED_TYPES = {
    "timer": {"name": str, "frequency_hz": _NUMBER, "ticks_per_ns": _NUMBER},
    "parameters": {"round_trips": int, "samples": int, "max_samples": int, "warmup": int, "timeout": _NUMBER,
                   "precision": _NUMBER, "max_time_per_pair": _NUMBER},
    "sampling": {"mode": str, "samples_taken": int},
    "order": {"by": str, "boundaries": dict},
    "cpu_selection": {"selector": str, "cpus": list, "of": list},  # the --cpus text as written
}
_JSON_NAMES = {dict: "a mapping", list: "a list", str: "a string", bool: "true or false", int: "an integer",
               _NUMBER: "a number"}


def _bad(path, what):
    return InputError(f"{path}: {what}")


def _typed(value, want, path, at):
    # JSON true/false are Python bools, which are ints: never accept one for a number or vice versa.
    if isinstance(value, bool) != (want is bool) or not isinstance(value, want):
        raise _bad(path, f"{at} must be {_JSON_NAMES[want]}, not {type(value).__name__} {short(value)}")
    return value


def check_header(header, path):
    """The header of a latency result, its fields checked against the schema."""
    _check_names(header, path)
    metadata = _typed(header.get("metadata", {}), dict, path, "metadata")
    validate(metadata, METADATA, path, "metadata")
    _check_metadata(metadata, path)
    _check_extras(header, path)
    _check_topology(metadata, path)
    return header


def _check_names(header, path):
    kernel = _typed(header.get("kernel", "?"), str, path, "kernel")
    if not kernel or len(kernel) > 64:
        raise _bad(path, f"kernel name of {len(kernel):,} characters; 1 to 64 allowed")
    name = _typed(header.get("name", ""), str, path, "name")
    if len(name) > MAX_NAME_CHARS:
        raise _bad(path, f"name of {len(name):,} characters; at most {MAX_NAME_CHARS:,}")


def _check_metadata(metadata, path):
    for key, want in _METADATA_TYPES.items():
        if metadata.get(key) is not None:
            _typed(metadata[key], want, path, f"metadata.{key}")
    for key in ("warnings", "notes"):
        for i, w in enumerate(metadata.get(key) or ()):
            _typed(w, str, path, f"metadata.{key}[{i}]")
    for key, fields in _NESTED_TYPES.items():
        for field, want in fields.items():
            value = (metadata.get(key) or {}).get(field)
            if value is not None:
                _typed(value, want, path, f"metadata.{key}.{field}")
    _check_boundaries(metadata, path)


def _check_boundaries(metadata, path):
    for level, starts in ((metadata.get("order") or {}).get("boundaries") or {}).items():
        _typed(starts, list, path, f"metadata.order.boundaries.{level}")
        for i, v in enumerate(starts):
            _typed(v, int, path, f"metadata.order.boundaries.{level}[{i}]")


def _check_extras(header, path):
    extras = _typed(header.get("extras", []), list, path, "extras")
    if len(extras) > MAX_EXTRAS or len(set(map(str, extras))) != len(extras):
        raise _bad(path, f"extras must be at most {MAX_EXTRAS} distinct names")
    for e in extras:
        if not isinstance(e, str) or not _EXTRA_NAME.match(e):
            raise _bad(path, f"extra array name {short(e)} is not a plain identifier")


def _check_topology(metadata, path):
    if not metadata.get("topology"):
        return
    fp = _npz.fingerprint(metadata["topology"])
    if fp is not None and fp in _GOOD_TOPOLOGIES:
        return
    try:
        Topology.from_dict(metadata["topology"])
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise _bad(path, f"metadata.topology is not a topology ({short(e, 120)})") from None
    if fp is not None:
        if len(_GOOD_TOPOLOGIES) >= 64:
            _GOOD_TOPOLOGIES.clear()
        _GOOD_TOPOLOGIES[fp] = True


#: Fingerprints (:func:`corelat._core.npz.fingerprint`) of topologies found good: the nodes of a
#: fleet share one, and rebuilding a 192-CPU Topology to check it cost more than the rest of a file.
_GOOD_TOPOLOGIES: dict = {}


def _numeric(arrays, name, kinds, path):
    if name not in arrays:
        raise _bad(path, f"no {name!r} array; not a corelat latency result")
    a = arrays[name]
    if a.dtype.kind not in kinds:
        what = "integers" if kinds == "iu" else "numbers"
        raise _bad(path, f"{name} holds {a.dtype} values; expected {what}")
    return a


def check_arrays(header, arrays, path):
    """``(cpus, samples, flags, extras)`` of a latency result, each checked."""
    cpus, flags = check_cpus_flags(arrays, path)
    samples = check_samples_member(header, arrays, len(cpus), path)
    extras = {}
    for e in header.get("extras", []):
        extras[e] = _numeric(arrays, "extra_" + e, "biuf", path)
    return cpus, samples, flags, extras


def check_cpus_flags(arrays, path):
    """``(cpus, flags)`` of a latency result, checked (what a reader that skips the samples needs)."""
    cpus = _numeric(arrays, "cpus", "iu", path)
    flags = _numeric(arrays, "flags", "iu", path)
    if cpus.ndim != 1:
        raise _bad(path, f"cpus has shape {cpus.shape}; expected a list of CPU ids")
    n = cpus.shape[0]
    if n > MAX_CPUS:
        raise _bad(path, f"{n:,} CPUs; at most {MAX_CPUS:,} allowed")
    if flags.shape != (n, n):
        raise _bad(path, f"flags has shape {flags.shape}; expected ({n}, {n})")
    check_cpus(cpus, path)
    if flags.size and (flags.min() < 0 or flags.max() > np.iinfo(np.uint32).max):
        raise _bad(path, "flags outside 0..2**32-1")
    return tuple(int(c) for c in cpus.tolist()), flags.astype(np.uint32, copy=False)


def latency_floor(header):
    """The lowest latency a result may hold: 0, or a little below for one-way (timer offsets)."""
    return 0.0 if header.get("metadata", {}).get("symmetric", True) else -ONEWAY_SLACK_NS


def check_samples_member(header, arrays, n, path):
    """The ``(n, n, k)`` samples of a latency result as float64, checked."""
    samples = _numeric(arrays, "samples", "biuf", path)
    if samples.ndim != 3 or samples.shape[:2] != (n, n):
        raise _bad(path, f"samples has shape {samples.shape}; expected ({n}, {n}, k) for {n} CPUs")
    # The cap on a file's arrays holds for what reading makes of them: int8 samples under the cap
    # would become eight times as many bytes as float64.
    if samples.size * 8 > _npz.MAX_ARRAY_BYTES:
        gib = samples.size * 8 / 1024**3
        raise _bad(path, f"samples of shape {samples.shape} would take {gib:.1f} GiB as float64; at most "
                         f"{_npz.MAX_ARRAY_BYTES / 1024**3:g} GiB (refused before converting them)")
    samples = samples.astype(np.float64, copy=False)
    check_samples(samples, path, floor=latency_floor(header))
    return samples


def check_cpus(cpus, path):
    """CPU ids: not negative, each once."""
    if cpus.size and cpus.min() < 0:
        raise _bad(path, f"negative CPU id {int(cpus.min())}")
    values, counts = np.unique(cpus, return_counts=True)
    if (counts > 1).any():
        raise _bad(path, f"CPU {int(values[counts > 1][0])} appears twice")


def check_samples(samples, path, floor=0.0):
    """Latencies in ns: NaN (not measured) or finite and at least ``floor``, and not all zero."""
    problem = latency_problem(samples, floor)
    if problem:
        raise _bad(path, f"samples: {problem}")


def latency_problem(values, floor=0.0, empty_ok=False):
    """What is wrong with ``values`` as latencies in ns (see :func:`check_samples`), or None.

    The one rule for what a file may hold and for what ``LatencyResult.from_matrix`` accepts, so
    that every result that can be saved can be loaded back (``empty_ok``: a matrix without any
    value is no file's content but a result an analysis can still describe).
    """
    flat = values.reshape(-1)
    low, high, seen = np.inf, -np.inf, False
    # In slices: a copy of a 2 GiB array's measured values doubled the memory reading a file takes.
    for start in range(0, flat.size, _CHUNK):
        part = flat[start:start + _CHUNK]
        part = part[~np.isnan(part)]
        if part.size == 0:
            continue
        if not np.isfinite(part).all():
            return "infinite latency"
        seen = True
        low, high = min(low, float(part.min())), max(high, float(part.max()))
    if not seen:
        return None if empty_ok else "no measured value"
    if low < floor:
        return f"negative latency {low:g} ns"
    if high == 0:
        return "every latency is 0 ns; not a measurement"
    return None


_CHUNK = 1 << 22  #: values per slice of :func:`latency_problem` (32 MiB of float64)


# -- one schema per kind (issue 24): every header field corelat reads, its JSON type and range -------
# A spec is a tuple: ("str", choices or None), ("int", lo, hi), ("num", lo, hi) (finite), ("bool",),
# ("opt", spec) (null allowed), ("list", item spec, most items), ("map", {key: spec}, required keys)
# (other keys are kept and never read), ("dict", value spec) (any short keys), ("any",).
_BIG = 1e15
TEXT = ("str", None)
COUNT = ("int", 0, 2**53)
NUMBER = ("num", -_BIG, _BIG)
TEXTS = ("list", TEXT, 100_000)
CPU_IDS = ("list", ("int", 0, MAX_CPUS * 16), MAX_CPUS)


def opt(spec):
    """``spec``, or JSON null."""
    return ("opt", spec)


#: Metadata every kind may carry, as the command line prints it.
METADATA_FIELDS = {
    "warnings": TEXTS, "notes": TEXTS, "hostname": opt(TEXT), "cpu_model": opt(TEXT),
    "date": opt(TEXT), "source": opt(TEXT), "topology_summary": opt(TEXT), "kernel_description": opt(TEXT),
    "statistic": opt(TEXT), "note": opt(TEXT), "path": opt(TEXT), "warning_cause": opt(TEXT),
    "symmetric": opt(("bool",)), "value_only": opt(("bool",)),
    # Mappings and lists are read with .get(key, {}): null is refused, not only other types.
    "timer": ("map", {"name": opt(TEXT), "frequency_hz": opt(NUMBER), "ticks_per_ns": opt(NUMBER)}, ()),
    "timer_mhz": NUMBER,
    "parameters": ("map", {k: opt(NUMBER) for k in ("round_trips", "samples", "max_samples", "warmup",
                                                     "timeout", "precision", "max_time_per_pair")}, ()),
    "sampling": opt(("map", {"mode": opt(TEXT), "samples_taken": opt(COUNT)}, ())),
    "home": ("map", {"requested": opt(TEXT), "method": opt(TEXT)}, ()),
}
METADATA = ("map", METADATA_FIELDS, ())

HEADERS = {
    "locks": ("map", {"name": opt(TEXT), "shared": ("bool",), "duration": ("num", 0, _BIG),
                      "metadata": METADATA}, ("shared", "duration")),
    "smt": ("map", {"name": opt(TEXT), "kernel": TEXT, "reason": opt(TEXT), "loops": ("list", TEXT, 64),
                    "partner_levels": ("list", TEXT, MAX_CPUS), "metadata": METADATA},
            ("kernel", "loops", "partner_levels")),
    "check": ("map", {"name": TEXT, "metadata": METADATA,
                      "records": ("list", ("map", {"name": TEXT, "status": ("str", ("ok", "info", "warn",
                                                                                       "unknown")),
                                                   "found": TEXT, "why": opt(TEXT), "value": ("any",)},
                                           ("name", "status", "found")), 10_000)},
              ("name", "records")),
    "placement": ("map", {"name": opt(TEXT), "homes": ("list", TEXT, 4096),
                          "results": ("list", ("map", {}, ()), 4096)}, ("homes", "results")),
}
_SETTING = ("one", (TEXT, NUMBER, ("bool",)))
_FLEET_GROUP = ("map", {"id": ("int", 0, 2**31), "label": TEXT, "cpu_model": opt(TEXT),
                        "topology_summary": opt(TEXT), "kernel": opt(TEXT), "cpus": CPU_IDS,
                        "class_source": opt(TEXT), "classes": ("list", TEXT, 64), "nodes": TEXTS,
                        "class_medians": ("dict", opt(NUMBER))},
                ("id", "label", "cpu_model", "topology_summary", "kernel", "cpus", "class_source", "classes",
                 "nodes", "class_medians"))
_FLEET_NODE = ("map", {"node": TEXT, "group": opt(("int", 0, 2**31)), "file": opt(TEXT),
                       "hostname": opt(TEXT), "date": opt(TEXT), "result_warnings": opt(COUNT),
                       "classes": ("dict", opt(NUMBER)), "settings": opt(("dict", opt(_SETTING))),
                       "differs": ("dict", ("list", opt(_SETTING), 2, 2))},
               ("node", "classes", "differs"))
_FLEET_OUTLIER = ("map", {"node": TEXT, "group": ("int", 0, 2**31), "class": TEXT, "value": NUMBER,
                          "median": NUMBER, "deviation": NUMBER, "threshold": NUMBER,
                          "differs": ("list", ("list", opt(_SETTING), 3, 3), 1000)},
                  ("node", "group", "class", "value", "median", "deviation", "threshold"))
HEADERS["fleet"] = ("map", {
    "fleet_version": ("int", 0, 2**31), "name": opt(TEXT), "warnings": opt(TEXTS), "notes": opt(TEXTS),
    "metadata": ("map", {**METADATA_FIELDS, "rel_threshold": NUMBER, "mad_threshold": NUMBER,
                         "min_group": COUNT, "corelat_version": opt(TEXT), "source": ("any",),
                         "missing_reasons": ("dict", opt(TEXT))}, ()),
    "groups": ("list", _FLEET_GROUP, 100_000), "nodes": ("list", _FLEET_NODE, 10**6),
    "outliers": ("list", _FLEET_OUTLIER, 10**6),
    "errors": ("list", ("map", {"node": TEXT, "error": TEXT, "file": opt(TEXT)}, ("node", "error")), 10**6),
    "missing": TEXTS}, ("groups", "nodes", "outliers", "errors", "missing"))
#: The levels an SMT result names a partner at ("" when it has none).
SMT_LEVELS = ("", "l2", "l3", "node", "package", "any")
HEADERS["smt"][1]["partner_levels"] = ("list", ("str", SMT_LEVELS), MAX_CPUS)


def _check_str(value, spec, at):
    if not isinstance(value, str):
        return "a string"
    if spec[1] is not None and value not in spec[1]:
        return f"one of {', '.join(spec[1])}"
    return None


def _check_int(value, spec, at):
    if isinstance(value, bool) or not isinstance(value, int) or not spec[1] <= value <= spec[2]:
        return f"an integer from {spec[1]:g} to {spec[2]:g}"
    return None


def _check_num(value, spec, at):
    ok = not isinstance(value, bool) and isinstance(value, (int, float))
    # Compared before math.isfinite: an integer of 400 digits overflows a float.
    if not ok or not spec[1] <= value <= spec[2] or not math.isfinite(value):
        return f"a number from {spec[1]:g} to {spec[2]:g}"
    return None


def _check_bool(value, spec, at):
    return None if isinstance(value, bool) else "true or false"


def _check_list(value, spec, at):
    least = spec[3] if len(spec) > 3 else 0
    if not isinstance(value, list) or not least <= len(value) <= spec[2]:
        return f"a list of {least:,} to {spec[2]:,} items"
    return [(v, spec[1], f"{at}[{i}]") for i, v in enumerate(value)]


def _check_map(value, spec, at):
    if not isinstance(value, dict):
        return "a mapping"
    missing = [k for k in spec[2] if k not in value]
    if missing:
        return f"a mapping with {missing[0]!r}"
    return [(value[k], s, f"{at}.{k}" if at else k) for k, s in spec[1].items() if k in value]


def _check_one(value, spec, at):
    for option in spec[1]:
        if _CHECKS[option[0]](value, option, at) is None:
            return None
    return "a string, a number or true/false"


def _check_dict(value, spec, at):
    if not isinstance(value, dict):
        return "a mapping"
    return [(v, spec[1], f"{at}.{k}") for k, v in value.items()]


_CHECKS = {"one": _check_one, "str": _check_str, "int": _check_int, "num": _check_num, "bool": _check_bool,
           "list": _check_list, "map": _check_map, "dict": _check_dict}


def validate(value, spec, path, at=""):
    """Check ``value`` against ``spec`` (see above); InputError naming the file and the field.

    Iterative: a header's tree is walked with a stack, not recursion.
    """
    stack = [(value, spec, at)]
    while stack:
        v, s, where = stack.pop()
        if s[0] == "opt":
            if v is None:
                continue
            s = s[1]
        if s[0] == "any":
            continue
        got = _CHECKS[s[0]](v, s, where)
        if isinstance(got, str):
            raise _bad(path, f"{where or 'header'} must be {got}, not {type(v).__name__} {short(v)}")
        if got:
            stack.extend(got)
    return value


def check_kind(kind, header, path):
    """The header of a result of ``kind`` checked against its schema (:data:`HEADERS`)."""
    if header.get("kind") != kind:
        return header  # the kind's reader says what the file is instead
    validate(header, HEADERS[kind], path)
    if kind == "fleet":
        _check_fleet_classes(header, path)
    return header


def _check_fleet_classes(header, path):
    """Every class a group names has its median; every node's classes are its group's."""
    classes = {}
    for g in header["groups"]:
        missing = set(g["classes"]) - set(g["class_medians"])
        if missing:
            raise _bad(path, f"group {g['id']}: class {short(sorted(missing)[0])} has no median")
        classes[g["id"]] = set(g["classes"])
    for r in header["nodes"]:
        if r.get("group") is not None and not set(r["classes"]) <= classes.get(r["group"], set()):
            raise _bad(path, f"node {short(r['node'])}: classes not those of group {r['group']}")


def check_kind_arrays(kind, header, arrays, path):
    """What a kind's arrays must hold beyond the container's checks (the command line reads them)."""
    cpus = arrays.get("cpus")
    if kind in ("smt", "locks") and cpus is not None and (cpus.ndim != 1 or cpus.dtype.kind not in "iu"):
        raise _bad(path, f"cpus must be a list of CPU ids, not {cpus.dtype} of shape {cpus.shape}")
    if kind == "smt" and "partners" in arrays:
        _check_smt_arrays(header, arrays, np.size(cpus), path)
    if kind == "placement":
        _check_placement_arrays(arrays, path)
    if kind == "locks":
        _check_lock_arrays(arrays, path)


def _positions(a, n):
    """Whether ``a`` holds integers that are positions 0..n-1 (or -1 where ``a`` may say "none")."""
    return a.dtype.kind in "iu" and (a.size == 0 or (a.min() >= -1 and a.max() < n))


def _check_smt_arrays(header, arrays, n, path):
    p = arrays["partners"]
    if p.ndim != 1 or not _positions(p, n):
        raise _bad(path, f"partners must be positions -1 to {n - 1} of the CPUs (integers)")
    pairs = arrays.get("pairs")
    if pairs is not None and (pairs.ndim != 2 or pairs.shape[1:] != (2,) or not _positions(pairs, n)
                              or pairs.size and pairs.min() < 0):
        raise _bad(path, f"pairs must be (k, 2) positions 0 to {n - 1} of the CPUs (integers)")
    levels = header["partner_levels"]
    if len(levels) != p.size or any((lv == "") != (q < 0) for lv, q in zip(levels, p.tolist())):
        raise _bad(path, "partner_levels must name a level for each partner, and only for them")


def _check_placement_arrays(arrays, path):
    for name, a in arrays.items():
        if name.endswith("_extra_home_node"):
            n = np.size(arrays.get(name.split("_", 1)[0] + "_cpus", ()))
            if a.dtype.kind not in "iu" or a.shape != (n, n):
                raise _bad(path, f"{name} must be ({n}, {n}) integers (NUMA nodes), "
                                 f"not {a.dtype} {a.shape}")


def _check_lock_arrays(arrays, path):
    """One test (or one test on one CPU) per row: 1-d columns of one length, names of known tests."""
    for part in ("data", "threads"):
        names = arrays.get(f"{part}.name")
        if names is None:
            continue
        if names.ndim != 1 or names.dtype.kind != "U" or not set(names.tolist()) <= _lock_tests():
            known = ", ".join(sorted(_lock_tests())[:3])
            raise _bad(path, f"{part}.name must name lock tests ({known}, ...)")
        dtype = _locks.ROW_DTYPE if part == "data" else _locks.THREAD_DTYPE
        for key, a in arrays.items():
            field = key[len(part) + 1:] if key.startswith(part + ".") else None
            if field not in (dtype.names or ()):
                continue
            # a row of a test that could not run has no figures: NaN there (the row says why)
            if (a.shape != names.shape or not np.can_cast(a.dtype, dtype[field], "same_kind")
                    or a.dtype.kind == "f" and not _locks.finite_where_ran(part, a, arrays.get("data.why"))):
                raise _bad(path, f"{key} must hold one finite {dtype[field]} value per row of {part}.name")


def _lock_tests():
    # Files written by corelat 0.1 name its tests (lock-pthread-mutex, ...): they still load.
    return set(_locks.TESTS) | set(_locks.HIDDEN_TESTS) | set(_lock_names.OLD_TESTS)


def check_file(header, arrays, path):
    """A file of one of :data:`HEADERS`' kinds: its header and arrays checked (what every door runs;
    latency and topology files check their own in their ``_from_npz``)."""
    check_kind(header["kind"], header, path)
    check_kind_arrays(header["kind"], header, arrays, path)


for _kind in HEADERS:
    register_file_check(_kind, check_file)
