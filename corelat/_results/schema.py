"""What a latency result file must hold: its header fields and arrays, checked before use.

:mod:`corelat._core.npz` has already bounded the file, its members' sizes and dtypes and the JSON
header's size and nesting; here a latency result's own schema is checked: the header fields corelat
reads have the JSON types it expects, names are short, and the arrays are consistent and make sense
(latencies finite and not negative, CPU ids distinct and not negative), as the CSV and c2clat
readers require of text files. Every problem raises :class:`~corelat._core.errors.InputError` naming the
file and what is wrong.
"""

import re

import numpy as np

from corelat._core.errors import InputError
from corelat._core import npz as _npz
from corelat._core.npz import short
from corelat._core.protocol import thaw
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
}
#: ... and inside those mappings, values that are printed as numbers or strings.
_NESTED_TYPES = {
    "timer": {"name": str, "frequency_hz": _NUMBER, "ticks_per_ns": _NUMBER},
    "parameters": {"round_trips": int, "samples": int, "max_samples": int, "warmup": int, "timeout": _NUMBER,
                   "precision": _NUMBER, "max_time_per_pair": _NUMBER},
    "sampling": {"mode": str, "samples_taken": int},
    "order": {"by": str, "boundaries": dict},
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
    try:
        Topology.from_dict(metadata["topology"])
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise _bad(path, f"metadata.topology is not a topology ({short(e, 120)})") from None


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
    return tuple(int(c) for c in cpus.tolist()), flags.astype(np.uint32)


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
        raise _bad(path, f"samples of shape {samples.shape} would take {samples.size * 8 / 1024**3:.1f} GiB "
                         f"as float64; at most {_npz.MAX_ARRAY_BYTES / 1024**3:g} GiB (refused before reading)")
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
