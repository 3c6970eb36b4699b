"""What may be asked of a measurement: kernels, sizes, CPU selections and sampling plans.

Every argument is checked here, in Python, before any thread starts; bad input raises
:class:`~corelat._core.errors.InputError` (a ``ValueError``) with a message that says what is allowed.
"""
from __future__ import annotations

import itertools
import os
from typing import NamedTuple

import numpy as np

from corelat._core.binding import extension
from corelat._core.errors import InputError, InputTypeError
from corelat._core.types import ORDERS, STATISTICS
from corelat._system import cpulist as _cpulist
from corelat._system import selectors as _selectors
from corelat._system import sysinfo as _sysinfo
from corelat._system.topology import Topology, topology

#: Ping-pong kernels: name -> (C kernel code attribute, description).
KERNELS = {
    "cas": ("KERNEL_CAS", "both threads compare-exchange one flag on one cache line (contended hand-off)"),
    "rw": ("KERNEL_RW",
           "each thread stores to its own cache line and spins loading the other's (data passing)"),
}
#: Asymmetric kernels, measured in both directions: name -> description.
ONEWAY_KERNELS = {
    "oneway": "the sender stores its timer reading, the receiver subtracts it from its own "
              "(one-way, both directions; needs timers synchronized across CPUs)",
}
#: Line-transfer kernels (Intel MLC's HIT/HITM), measured in both directions: name -> (C kind, description).
CHASE_KERNELS = {
    "read-clean": ("CHASE_CLEAN", ("a load of a line another core holds clean (it read it last; MLC's HIT): "
                   "a pointer chase through lines the owner read, per line; one-way, unlike cas/rw's round "
                   "trips")),
    "read-modified": ("CHASE_MODIFIED",
                      ("a load of a line another core holds modified (it wrote it last; MLC's "
                      "HITM): a pointer chase through lines the owner wrote, per line; the one-way half of "
                      "what "
                      "rw's round trip does twice")),
}
#: Every kernel measure() accepts: name -> description.
ALL_KERNELS = {**{k: v[1] for k, v in KERNELS.items()}, **ONEWAY_KERNELS,
               **{k: v[1] for k, v in CHASE_KERNELS.items()}}

#: Sweep strategies: every pair, or enough pairs per topology block pair (the rest estimated).
STRATEGIES = ("full", "sample")

#: Fixed-size sampling where a command takes it by default (``corelat smt``): samples per pair.
DEFAULT_SAMPLES = 300
#: Precision-driven sampling (``samples=None``, the default): target half-width of the median's
#: 95 % CI, relative.
DEFAULT_PRECISION = 0.02
#: ... time budget per pair in seconds (all chunks together) ...
DEFAULT_MAX_TIME_PER_PAIR = 0.2
#: ... and at most this many samples per pair, ``max_samples`` (bounds the result's memory:
#: n² × this × 8 bytes).
DEFAULT_MAX_SAMPLES = 1000
#: Samples in a pair's first chunk, and the fewest in a later one (each chunk is one C call with
#: its own threads, buffer and warm-up, so chunks are not made smaller than this).
FIRST_CHUNK = 32
MIN_CHUNK = 16
#: A later chunk holds at most this many times the samples taken so far. Each chunk starts a new
#: pair of threads, which on a loaded machine waits milliseconds for its CPUs, so chunks are few
#: and large; the cap keeps one noisy first estimate from overshooting far.
MAX_GROWTH = 3
#: ``retest=True`` re-measures at most this share of the measured pairs (at least one).
RETEST_FRACTION = 0.1

#: Smallest sizes that mean something (smaller ones are measured, with a warning saying why):
#: a sample of fewer round trips carries the timer's own cost and step in every value, and with
#: fewer samples per pair the distribution-free 95 % interval of the median does not exist (the
#: widest one, min..max, covers the median with probability 1 - 2 / 2**n < 95 % for n < 6).
MIN_ROUND_TRIPS = 100
MIN_SAMPLES = 6

#: Largest sizes accepted: beyond them a sweep would run for days or exhaust memory.
MAX_ROUND_TRIPS = 10_000_000
MAX_SAMPLES = 1_000_000


def allowed_cpus() -> list[int]:
    """The CPUs this process may run on (respects taskset and cgroup cpusets).

    Returns
    -------
    list of int
        CPU ids, ascending.

    Examples
    --------
    >>> import os, corelat
    >>> corelat.allowed_cpus() == sorted(os.sched_getaffinity(0))
    True
    """
    if not hasattr(os, "sched_getaffinity"):  # macOS, Windows: no CPU affinity, no measuring core built

        extension()  # raises "measuring needs Linux ..."
    return sorted(os.sched_getaffinity(0))


def possible_cpus():
    """How many CPU ids this machine can ever have: one more than the largest id in
    ``/sys/devices/system/cpu/possible`` (hot-pluggable CPUs included), else the online CPUs
    (:func:`~corelat._system.sysinfo.cpu_count`: ``os.cpu_count()`` would block on a FIFO there)."""
    text = _sysinfo.read_text("/sys/devices/system/cpu/possible")
    try:
        return max(_cpulist.parse(text, limit=1 << 22)) + 1
    except (InputError, ValueError):
        return max(_sysinfo.cpu_count() or 1, max(allowed_cpus(), default=0) + 1)


def _listed_cpus(cpus, allowed, limit):
    """The selection as a list (not yet checked), read no further than ``limit + 1`` items."""
    if cpus is None:
        return allowed
    if isinstance(cpus, str):
        return _cpulist.parse(cpus, limit=limit)
    if isinstance(cpus, (bytes, bytearray, memoryview)) or not hasattr(cpus, "__iter__"):
        raise InputTypeError(f"cpus must be a list of CPU ids or a string like '0,2,4-7', not "
                         f"{type(cpus).__name__} {cpus!r:.60}")
    listed = list(itertools.islice(cpus, limit + 1))
    if len(listed) > limit:
        raise InputError(f"cpus lists more than the {limit:,} CPUs this machine can have "
                         "(/sys/devices/system/cpu/possible)")
    return listed


def _cpu_ids(cpus):
    """The listed CPUs as Python ints; bools and non-integers are refused."""
    out = []
    for c in cpus:
        if isinstance(c, bool) or not isinstance(c, (int, np.integer)):
            raise InputTypeError(f"cpus: CPU ids must be integers, got {type(c).__name__} {c!r:.60}")
        out.append(int(c))
    return out


def _refuse_duplicates(cpus):
    seen, dup = set(), set()
    for c in cpus:
        (dup if c in seen else seen).add(c)
    if dup:
        raise InputError(f"CPU {_cpulist.format(dup)} listed more than once")


def _offline_among(cpus):
    """Those of ``cpus`` the kernel does not list as online (none when it says nothing readable):
    they explain a refusal better than the affinity alone."""
    online = _sysinfo.read_text("/sys/devices/system/cpu/online")
    if not online:
        return []
    try:
        online_set = set(_cpulist.parse(online, limit=1 << 22))
    except InputError:
        online_set = set()
    return [c for c in cpus if c not in online_set]


def _refuse_unavailable(cpus, allowed):
    allowed_set = set(allowed)
    bad = [c for c in cpus if c not in allowed_set]
    if not bad:
        return
    offline = _offline_among(bad)
    why = f" ({_cpulist.format(offline)} not online or not present)" if offline else ""
    raise InputError(
        f"CPU {_cpulist.format(bad)} not available to this process" + why
        + f"; allowed CPUs: {_cpulist.format(allowed)}"
    )


def _refuse_too_few(cpus, allowed, minimum):
    if len(cpus) < minimum:
        raise InputError(
            f"need at least {minimum} CPUs, got {len(cpus)}"
            + (f" (this process may only use CPU {_cpulist.format(allowed)})"
               if len(allowed) < minimum else "")
        )


def _selected(text, allowed, minimum):
    """A selection with words or ``+`` (see :mod:`corelat._system.selectors`) on this machine: the
    topology is read only when a word needs it."""
    words = any(t.word for t in _selectors.parse(text))
    out = _selectors.select(text, topology() if words else None, allowed=allowed, minimum=minimum)
    _refuse_unavailable(out, allowed)
    _refuse_too_few(out, allowed, minimum)
    return out


def resolve_cpus(cpus, minimum=2):
    """Validate a CPU selection → tuple: None (every allowed CPU), a list of ints, a CPU list like
    ``"0,2,4-7"``, or a topology selection like ``"cores"`` or ``"node:0+node:1-smt"`` (the grammar
    of :mod:`corelat._system.selectors`; its CPUs come in topology order).

    Linear in the length of the selection, and a selection longer than the machine's possible CPU
    count (:func:`possible_cpus`) is refused before it is read to the end (``range(10**9)`` too).
    """
    allowed = allowed_cpus()
    if _selectors.is_selection(cpus):
        return _selected(cpus, allowed, minimum)
    limit = max(possible_cpus(), len(allowed))
    out = _cpu_ids(_listed_cpus(cpus, allowed, limit))
    _refuse_duplicates(out)
    _refuse_unavailable(out, allowed)
    _refuse_too_few(out, allowed, minimum)
    return tuple(out)


def check_topology(topology, records=True):
    """``topology=`` arguments: None, a :class:`~corelat._system.topology.Topology`, or (with ``records``)
    a list of its ``records()`` (dicts with an integer ``"cpu"``). Raises InputTypeError otherwise."""

    if (topology is None or isinstance(topology, Topology)
            or records and callable(getattr(topology, "records", None))):
        return topology
    if records and isinstance(topology, (list, tuple)) and all(
            isinstance(r, dict) and isinstance(r.get("cpu"), int) and not isinstance(r.get("cpu"), bool)
            for r in topology):
        return topology
    want = "a corelat.Topology" + (" or a list of its records()" if records else "")
    raise InputTypeError(f"topology must be {want}, not {type(topology).__name__} {topology!r:.60}")


def _positive_int(name, value, maximum, minimum=1):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InputError(f"{name} must be an integer, got {value!r}")
    if not minimum <= value <= maximum:
        raise InputError(f"{name} must be between {minimum} and {maximum:,}, got {value}")
    return int(value)


#: Every timeout corelat takes (measure, smt, locks, the CLI), in seconds: how long a thread waits
#: for another (a partner's answer, a lock, the others at a barrier) seeing no progress.
MIN_TIMEOUT, MAX_TIMEOUT = 0.001, 3600.0
#: ... and its default, the same everywhere.
DEFAULT_TIMEOUT = 1.0


def seconds(name, value, lo, hi):
    """``value`` as a float number of seconds within ``[lo, hi]``; InputError naming ``name`` otherwise.

    The one validation of durations and time-outs."""
    if isinstance(value, bool):
        raise InputError(f"{name} must be a number of seconds, got {value!r}")
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number of seconds, got {value!r}") from None
    if not lo <= value <= hi:  # also refuses NaN
        raise InputError(f"{name} must be between {lo:g} and {hi:g} seconds, got {value:g}")
    return value


def check_order(order, keep=True, allowed=ORDERS):
    """``order`` if it is one of ``allowed`` (:data:`~corelat._core.types.ORDERS`, or the
    ``RESULT_ORDERS`` a result and a measurement know; with ``keep``, None too: keep the order there
    is); InputError saying which are otherwise."""
    if order is None and keep:
        return order
    if order == "structure" and "structure" not in allowed:
        raise InputError("order by the latency structure by handing the result its structure: "
                         "r.ordered(corelat.structure(r)) (or --order structure on the command line)")
    if not isinstance(order, str) or order not in allowed:
        raise InputError(f"unknown order {order!r}; use one of: {', '.join(map(repr, allowed))}")
    return order


def check_statistic(statistic):
    """``statistic`` if it is one of :data:`~corelat._core.types.STATISTICS`; InputError otherwise."""
    if not isinstance(statistic, str) or statistic not in STATISTICS:
        raise InputError(f"unknown statistic {statistic!r}; use one of: {', '.join(map(repr, STATISTICS))}")
    return statistic


def check_params(kernel, round_trips, samples, warmup, timeout):
    """Validate sweep parameters; returns them normalised. Raises InputError.

    ``samples`` may be None (precision-driven sampling chooses); it is returned as None then.
    """
    if not isinstance(kernel, str) or kernel not in ALL_KERNELS:
        raise InputError(f"unknown kernel {kernel!r}; choose one of: {', '.join(ALL_KERNELS)}")
    round_trips = _positive_int("round_trips", round_trips, MAX_ROUND_TRIPS)
    if samples is not None:  # None: the sampling mode decides (see check_sampling)
        samples = _positive_int("samples", samples, MAX_SAMPLES)
    if warmup is None:
        # A tenth of the samples (at least one) lets caches, branch predictors and clock
        # frequency settle on the pair before anything is kept. Precision-driven sampling warms
        # up before every chunk, so a tenth of a first chunk.
        warmup = max(1, (samples or FIRST_CHUNK) // 10)
    warmup = _positive_int("warmup", warmup, MAX_SAMPLES, minimum=0)
    timeout = seconds("timeout", timeout, MIN_TIMEOUT, MAX_TIMEOUT)
    return kernel, round_trips, samples, warmup, timeout


def check_skew_params(messages, samples, timeout):
    """Validate the sizes of :func:`corelat.clock_skew` as :func:`check_params` does a sweep's
    (``messages`` are the one-way kernel's round trips); returns them normalised. Raises InputError."""
    messages = _positive_int("messages", messages, MAX_ROUND_TRIPS)
    samples = _positive_int("samples", samples, MAX_SAMPLES)
    return messages, samples, seconds("timeout", timeout, MIN_TIMEOUT, MAX_TIMEOUT)


def _is_number(value, number):
    return (not isinstance(value, bool) and isinstance(value, (int, float, np.integer, np.floating))
            and value == number)


class SamplingPlan(NamedTuple):
    """How many samples each pair gets (see :func:`check_sampling`)."""

    mode: str  #: "fixed" or "precision"
    samples: int  #: fixed: samples per pair; precision: the most samples per pair (``max_samples``)
    precision: float | None = None  #: target half-width of the median's CI, relative to the median
    max_time_per_pair: float | None = None  #: seconds per pair, all chunks together
    first_chunk: int = FIRST_CHUNK
    min_chunk: int = MIN_CHUNK


def sampling_parameters(plan):
    """The sampling arguments a :class:`SamplingPlan` came from, for a result's
    ``metadata["parameters"]``: ``samples`` (fixed-size), or ``precision``, ``max_samples`` and
    ``max_time_per_pair``."""
    if plan.mode == "fixed":
        return {"samples": plan.samples}
    return {"precision": plan.precision, "max_samples": plan.samples,
            "max_time_per_pair": plan.max_time_per_pair}


def sampling_text(params):
    """How a result was sampled, in words, from its ``metadata["parameters"]``."""
    if "precision" not in params:
        return f"{params.get('samples')} samples"
    cap = params.get("max_samples", params.get("samples"))  # files before 0.1 kept the cap in "samples"
    return (f"sampled until the median is within ±{params.get('precision', 0):.1%}, at most {cap} samples "
            f"and {params.get('max_time_per_pair')} s")


def check_sampling(samples=None, precision=DEFAULT_PRECISION, max_samples=DEFAULT_MAX_SAMPLES,
                   max_time_per_pair=DEFAULT_MAX_TIME_PER_PAIR):
    """Validate the sampling arguments of :func:`corelat.measure` and return a :class:`SamplingPlan`.

    ``samples=None`` is precision-driven: each pair is sampled until the 95 % CI of its median is
    within ±``precision`` of it, at most ``max_samples`` samples and ``max_time_per_pair`` seconds.
    An integer ``samples`` takes exactly that many per pair (the fixed-size mode of
    core-to-core-latency); the precision-driven arguments then must keep their defaults, since they
    would not apply.
    """
    if samples is not None:
        samples = _positive_int("samples", samples, MAX_SAMPLES)
        given = [f"{k}={v!r}" for k, v, d in (("precision", precision, DEFAULT_PRECISION),
                                               ("max_samples", max_samples, DEFAULT_MAX_SAMPLES),
                                               ("max_time_per_pair", max_time_per_pair,
                                                DEFAULT_MAX_TIME_PER_PAIR))
                 if not _is_number(v, d)]
        if given:
            raise InputError(f"{', '.join(given)}: for precision-driven sampling (samples=None); "
                             f"samples={samples} "
                             "takes exactly that many per pair")
        return SamplingPlan("fixed", samples)
    if isinstance(precision, bool):
        raise InputError(f"precision must be a fraction like 0.02, got {precision!r}")
    try:
        precision = float(precision)
    except (TypeError, ValueError):
        raise InputError(f"precision must be a fraction like 0.02, got {precision!r}") from None
    if not 0.0001 <= precision <= 0.5:
        raise InputError("precision must be between 0.0001 and 0.5 (a fraction of the median), got "
                         f"{precision}")
    cap = _positive_int("max_samples", max_samples, MAX_SAMPLES)
    max_time_per_pair = seconds("max_time_per_pair", max_time_per_pair, 0.001, 3600.0)
    return SamplingPlan("precision", cap, precision, max_time_per_pair,
                        first_chunk=min(FIRST_CHUNK, cap), min_chunk=min(MIN_CHUNK, cap))


def as_list(value, message):
    """``[value]`` for a string, else ``list(value)``; InputError(``message``) for what is neither
    (the one reading of arguments that take a name or a list of names)."""
    if isinstance(value, str):
        return [value]
    try:
        return list(value)
    except TypeError:
        raise InputError(message) from None
