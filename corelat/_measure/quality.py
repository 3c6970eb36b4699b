"""Is a pair's measurement trustworthy? Per-pair diagnostics and the warnings a result carries.

Latency samples on real machines are skewed (a long tail of preempted samples) and, on virtual
machines, often fall in separate groups: the same pair reads 8 ns while the two vCPUs share a host
core, ~90 ns across host cores and ~300 ns when one vCPU was descheduled. A median of such samples
picks one group and its confidence interval says nothing about the others, so corelat looks at the
shape of every pair's samples and says what it saw:

* **bimodal** (:func:`bimodality`): the samples split into two clearly separated groups, each holding
  a real share of them (not a handful of outliers);
* **unstable** (:func:`relative_spread`): the middle 80 % of the samples spans more than
  :data:`SPREAD_THRESHOLD` of the median;
* **migrated**: samples were dropped because a thread was seen off its CPU (set by the sweep);
* **target not met**: the precision target was not reached within the time budget (set by the sweep).

:func:`assess` turns samples into :class:`~corelat._results.latency.PairFlag` bits,
:func:`sweep_warnings` turns a sweep's flags into pyperf-style sentences for ``result.warnings``.
"""

import math
from typing import NamedTuple

import numpy as np

from corelat._core import stats as _stats
from corelat._results.latency import PairFlag

#: A pair is UNSTABLE when (90th - 10th percentile) / median exceeds this. On a quiet core the
#: middle 80 % of samples spans a few percent (this project's VM: 1-2 % for ``cas``); a spread of
#: a third of the median means the value depends on when it was measured.
SPREAD_THRESHOLD = 0.3

#: Bimodality: the smaller group must hold at least this share of the samples (rarer values are
#: outliers, which the median already ignores) ...
MIN_GROUP_FRACTION = 0.1
#: ... the groups must be this many pooled standard deviations apart (Ashman's D on log values;
#: an unimodal normal split at its mean gives 2.65, a uniform distribution 3.46) ...
MIN_SEPARATION = 4.0
#: ... and their medians must differ by this factor (two groups 3 % apart are one latency).
MIN_RATIO = 1.1
#: Fewer valid samples than this are never called bimodal: there is too little to see a shape.
MIN_SAMPLES = 20

# A group needs at least this many samples: two or three close values among a sparse tail are
# chance, not a mode.
_MIN_GROUP = 5

# Relative resolution of a sample: groups tighter than this (in log units, i.e. 1 %) are treated
# as this wide, so quantised or identical values do not make an infinite separation.
_LOG_FLOOR = 0.01

#: The bits :func:`assess` decides from samples alone.
SHAPE_FLAGS = PairFlag.UNSTABLE | PairFlag.BIMODAL

#: A pair with any of these is re-measured at the end of a sweep (LinkTest-style).
RETEST_FLAGS = PairFlag.UNSTABLE | PairFlag.BIMODAL | PairFlag.MIGRATED


class Bimodality(NamedTuple):
    """What :func:`bimodality` found in one pair's samples."""

    bimodal: bool  #: the samples form two clearly separated groups
    low: float  #: median of the lower group (ns); NaN with too few samples
    high: float  #: median of the upper group (ns)
    fraction: float  #: share of samples in the smaller group
    separation: float  #: Ashman's D between the groups, on log values
    split: float  #: the boundary: samples below it are in the lower group (ns)


_NONE = Bimodality(False, math.nan, math.nan, 0.0, 0.0, math.nan)


def _valid(x):
    x = np.asarray(x, dtype=np.float64).ravel()
    return x[np.isfinite(x) & (x > 0)]


def separation_threshold(n, min_separation=MIN_SEPARATION):
    """The separation two groups of ``n`` samples in all need to be called bimodal.

    Small samples look clumpy by chance: cutting ``n`` uniform values (the flattest unimodal shape)
    in two gives a separation whose 99.9th percentile is about ``3.3 + 13 / sqrt(n)`` (6.2 at n=20,
    4.3 at n=100, 3.6 at n=1000, by simulation); the threshold never goes below ``min_separation``.
    """
    return max(float(min_separation), 3.3 + 13.0 / math.sqrt(max(n, 1)))


def bimodality(x, *, min_fraction=MIN_GROUP_FRACTION, min_separation=MIN_SEPARATION,
               min_ratio=MIN_RATIO, min_samples=MIN_SAMPLES):
    """Do the samples ``x`` fall in two clearly separated groups?

    The samples are split in two by the best 2-means cut of their logarithms (Otsu's threshold:
    latencies are ratios, and a preempted group sits a factor away, not a fixed distance), among the
    cuts that leave at least ``min_fraction`` of the samples on each side. They are bimodal when the
    two groups are at least ``min_separation`` pooled standard deviations apart (Ashman's D) and
    their medians differ by at least ``min_ratio``. NaN and non-positive samples are ignored.

    A single skewed or heavy-tailed group (lognormal, gamma, a body with a long preemption tail) is
    not bimodal: cutting one group in two gives D ≈ 2.7 (normal) to 3.5 (flat).
    """
    return _bimodality_sorted(np.sort(_valid(x)), min_fraction, min_separation, min_ratio, min_samples)


def _bimodality_sorted(v, min_fraction=MIN_GROUP_FRACTION, min_separation=MIN_SEPARATION,
                       min_ratio=MIN_RATIO, min_samples=MIN_SAMPLES):
    # v: the valid samples, sorted; their logs are sorted too, so group medians are middle elements.
    y = np.log(v)
    n = y.size
    if n < max(min_samples, 4):
        return _NONE
    k = max(_MIN_GROUP, math.ceil(min_fraction * n))  # smallest group allowed
    if 2 * k > n:
        return _NONE
    # Within-group sum of squares for every cut s (lower group y[:s]) from prefix sums.
    c1 = np.concatenate(([0.0], np.cumsum(y)))
    c2 = np.concatenate(([0.0], np.cumsum(y * y)))
    s = np.arange(k, n - k + 1)
    n1, n2 = s, n - s
    sum1, sum2 = c1[s], c1[n] - c1[s]
    sse = (c2[s] - sum1 * sum1 / n1) + ((c2[n] - c2[s]) - sum2 * sum2 / n2)
    best = int(s[np.argmin(sse)])
    lo, hi = y[:best], y[best:]
    # The groups' means and variances from the prefix sums at hand (NumPy's mean/var cost ~20 µs a
    # pair in call overhead alone: a third of a sweep's Python per pair, benchmarks/RESULTS.md).
    m_lo, m_hi = c1[best] / best, (c1[n] - c1[best]) / (n - best)
    v_lo = max(c2[best] / best - m_lo * m_lo, 0.0)
    v_hi = max((c2[n] - c2[best]) / (n - best) - m_hi * m_hi, 0.0)
    d = (m_hi - m_lo) / math.sqrt(max(v_lo, v_hi) + _LOG_FLOOR**2)
    low, high = float(np.exp(_stats.sorted_median(lo))), float(np.exp(_stats.sorted_median(hi)))
    fraction = min(best, n - best) / n
    split = float(np.exp((y[best - 1] + y[best]) / 2.0))
    bimodal = bool(d >= separation_threshold(n, min_separation) and high >= min_ratio * low)
    return Bimodality(bimodal, low, high, float(fraction), float(d), split)


def is_bimodal(x, **kw):
    """True when :func:`bimodality` finds two clearly separated groups in ``x``."""
    return bimodality(x, **kw).bimodal


def relative_spread(x):
    """(90th percentile - 10th percentile) / median of the valid samples; NaN with fewer than 2."""
    return _spread_sorted(np.sort(_valid(x)))


def _percentile_sorted(v, q):
    # NumPy's default ("linear") percentile of sorted v, without its per-call overhead.
    pos = q / 100.0 * (v.size - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, v.size - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def _spread_sorted(v):
    if v.size < 2:
        return math.nan
    p10, p50, p90 = (_percentile_sorted(v, q) for q in (10, 50, 90))
    return float((p90 - p10) / p50)


def relative_ci(x):
    """Half-width of the median's 95 % confidence interval relative to the median (inf if unknown).

    ``x`` is ``(..., k)``; the result reduces the last axis. This is the number precision-driven
    sampling drives below its target.
    """
    a = np.asarray(x, dtype=np.float64)
    med, lo, hi = _stats.median_and_ci(a)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (hi - lo) / 2.0 / med
    return np.where(np.isfinite(r) & (med > 0) & (_stats.count(a) >= 2), r, np.inf)


def pair_flags(x, *, spread_threshold=SPREAD_THRESHOLD, **bimodal_kw):
    """The :data:`SHAPE_FLAGS` bits one pair's samples deserve (a :class:`PairFlag`)."""
    f = PairFlag(0)
    v = np.sort(_valid(x))  # one sort serves both checks
    spread = _spread_sorted(v)
    if not math.isnan(spread) and spread > spread_threshold:
        f |= PairFlag.UNSTABLE
    if _bimodality_sorted(v, **bimodal_kw).bimodal:
        f |= PairFlag.BIMODAL
    return f


def assess(samples, flags=None, *, spread_threshold=SPREAD_THRESHOLD, **bimodal_kw):
    """Flags ``(n, n)`` with :data:`SHAPE_FLAGS` recomputed from ``samples`` ``(n, n, k)``.

    Other bits of ``flags`` are kept. Cells without samples, and cells only estimated or mirrored
    (their measured twin carries the verdict and it is copied), are left as they are.
    """
    samples = np.asarray(samples, dtype=np.float64)
    n = samples.shape[0]
    out = np.zeros((n, n), np.uint32) if flags is None else np.array(flags, dtype=np.uint32)
    for i in range(n):
        for j in range(n):
            if i == j or (flags is not None and not out[i, j] & PairFlag.MEASURED):
                continue
            f = pair_flags(samples[i, j], spread_threshold=spread_threshold, **bimodal_kw)
            out[i, j] = (out[i, j] & ~np.uint32(SHAPE_FLAGS)) | np.uint32(f)
    return out


def _pairs(flags, bit, cpus, symmetric=True):
    """CPU pairs (unordered, larger index first) with ``bit`` set on a measured cell. A one-way
    result measures both directions of a pair in one run: the pair counts once, as for the
    round-trip kernels, so every message counts one thing."""
    f = np.asarray(flags)
    cells = (f & bit) != 0
    cells &= (f & PairFlag.MEASURED) != 0
    cells = np.tril(cells, -1) | np.tril(cells.T, -1)
    idx = np.argwhere(cells)
    return [(cpus[i], cpus[j]) for i, j in idx]


def _example(pairs, limit=3):
    shown = ", ".join(f"{a}-{b}" for a, b in pairs[:limit])
    return shown + (f" and {len(pairs) - limit} more" if len(pairs) > limit else "")


def _n(count, what="CPU pair"):
    return f"{count} {what}" + ("" if count == 1 else "s")


def cause(hypervisor):
    """The one cause shared by the bimodal and unstable warnings on a virtual machine, or None."""
    if not hypervisor:
        return None
    who = "a hypervisor" if hypervisor in ("yes", True) else hypervisor
    return (f"running under {who}: the host moves vCPUs between its cores, which makes pairs bimodal or "
            "unstable")


#: Python words in the messages below, and what the command line calls the same thing. Messages are
#: stored with a result in the Python API's words; the CLI prints them through :func:`for_cli`.
CLI_WORDS = (
    ("pass retest=N to re-measure more", "use --retest N to re-measure more"),
    ("The first attempts are in result.extras['first_attempt']",
     "Save the result (-o FILE); 'corelat report FILE --pairs' shows both attempts"),
    ("(max_time_per_pair=SECONDS)", "(--max-time-per-pair SECONDS)"),
    ("(flag ESTIMATED; result.extras['estimated_from'] says which)",
     "('corelat report FILE --pairs' says which)"),
    ("Run corelat.check()", "Run 'corelat check'"),
    ("; see extras['home_node']", "; the result saved with -o FILE records each pair's node"),
    ("result.extras['moved'] counts the moves per pair",
     "the result saved with -o FILE counts the moves per pair"),
)


def for_cli(message):
    """A message in the command line's words (its options and commands, not Python arguments)."""
    for python, cli in CLI_WORDS:
        message = message.replace(python, cli)
    return message


def shared_cause(flags, hypervisor):
    """What the bimodal and unstable warnings have in common (a hypervisor), said once, or None."""
    f = np.asarray(flags)
    affected = ((f & (PairFlag.BIMODAL | PairFlag.UNSTABLE)) != 0) & ((f & PairFlag.MEASURED) != 0)
    return cause(hypervisor) if affected.any() else None


def directions(median, bound, cpus):
    """A note on a one-way result: do its two directions differ by more than the timers can explain?

    ``median[i, j]`` is cpus[i] → cpus[j]; ``bound[i, j]`` the measured bound on the two CPUs' timer
    offset. An offset d adds d to one direction and takes it from the other, so a difference of up
    to 2 × bound may be the offset alone; (a→b + b→a) / 2 is free of it. Returns None when there is
    nothing to say (no pair with both directions and a bound)."""
    med, bnd = np.asarray(median, dtype=float), np.asarray(bound, dtype=float)
    within, beyond = [], []
    for i in range(len(cpus)):
        for j in range(i):
            ab, ba, b = med[i, j], med[j, i], bnd[i, j]
            if not (np.isfinite(ab) and np.isfinite(ba) and np.isfinite(b)):
                continue
            (within if abs(ab - ba) <= 2 * b else beyond).append((abs(ab - ba), i, j, ab, ba, b))
    if not within and not beyond:
        return None

    def example(rows):
        _, i, j, ab, ba, b = max(rows)
        return (f"e.g. {cpus[i]}→{cpus[j]} {ab:.1f} ns and {cpus[j]}→{cpus[i]} {ba:.1f} ns, timer offset "
                f"within ±{b:.0f} ns; offset-free (a→b + b→a) / 2 = {(ab + ba) / 2:.1f} ns")

    total = len(within) + len(beyond)
    if not beyond:
        which = "the CPU pair" if total == 1 else f"all {_n(total)}"
        return (f"The two directions of {which} differ by no more than the timers' offset could make them "
                f"({example(within)}): the asymmetry cannot be told from a timer offset")
    return (f"The two directions of {len(beyond)} of {_n(total)} differ by more than the timers' offset can "
            f"explain ({example(beyond)}); for the other {len(within)} the difference may be the offset")


def sweep_warnings(flags, cpus, *, symmetric=True, samples=None, precision=None, max_time_per_pair=None,
                   retested=0, estimated=0):
    """``(warnings, notes)`` about a sweep, pyperf-style: what looks wrong, why it matters, what to try.

    ``flags`` is the result's ``(n, n)`` array; ``samples`` (optional) lets the bimodal warning
    show the two groups of one pair. Lines that report what the sweep did rather than a problem
    (re-tests that came out clean, estimated pairs) are notes.
    Every count is of CPU pairs (a one-way pair's two directions count once). A cause shared by
    several warnings (a hypervisor) is not repeated in them: :func:`cause` says it once.
    """
    info = []
    cpus = tuple(cpus)
    out = []

    def count(bit):
        return _pairs(flags, bit, cpus, symmetric)

    total = len(count(PairFlag.MEASURED))

    migrated = count(PairFlag.MIGRATED)
    if migrated:
        out.append(f"{_n(len(migrated))} had samples dropped because a thread was not on its CPU "
                   f"({_example(migrated)})")
    bimodal = count(PairFlag.BIMODAL)
    if bimodal:
        detail = ""
        if samples is not None:
            pos = {c: i for i, c in enumerate(cpus)}
            a, b = bimodal[0]
            bm = bimodality(np.asarray(samples)[pos[a], pos[b]])
            if bm.bimodal:
                detail = (f"; e.g. CPUs {a}-{b}: samples near {bm.low:.3g} ns and near {bm.high:.3g} ns, "
                          f"{bm.fraction:.0%} in the smaller group")
        out.append(f"{_n(len(bimodal))} {'is' if len(bimodal) == 1 else 'are'} bimodal: samples fall in two "
                   f"separate groups ({_example(bimodal)}){detail}. The median shows one group only; look at "
                   f"the raw samples")
    unstable = count(PairFlag.UNSTABLE)
    if unstable:
        out.append(f"{_n(len(unstable))} {'is' if len(unstable) == 1 else 'are'} unstable: the middle 80 % "
                   f"of the samples spans more than {SPREAD_THRESHOLD * 100:.0f} % of the median "
                   f"({_example(unstable)}). Run corelat.check() to find what disturbs the machine (load, "
                   f"frequency scaling, hypervisor)")
    missed = count(PairFlag.TARGET_NOT_MET)
    if missed:
        target = f"±{precision:.1%}" if precision else "the precision"
        budget = f" within {max_time_per_pair:g} s" if max_time_per_pair else ""
        out.append(f"{len(missed)} of {_n(total)} did not reach {target}{budget} "
                   f"({_example(missed)}); their ± is wider. Allow more time per pair "
                   f"(max_time_per_pair=SECONDS) or accept a looser precision")
    if retested:
        still = len(set(count(PairFlag.RETESTED)) & set(count(RETEST_FLAGS)))
        line = (f"{_n(retested)} looked unstable and {'was' if retested == 1 else 'were'} re-measured at the "
                f"end of the sweep; {still} of them still {'looks' if still == 1 else 'look'} unstable. "
                f"The first attempts are in result.extras['first_attempt']")
        (out if still else info).append(line)
    if estimated:
        info.append(
            f"{estimated} of {_n(total + estimated)} were not measured but estimated from measured pairs of "
            f"the same topology blocks (flag ESTIMATED; result.extras['estimated_from'] says which)")
    return out, info


def _were(count):
    return "was" if count == 1 else "were"


def moved_warning(moved):
    """The warning on pairs measured again because something outside corelat moved a measuring
    thread off its CPU (``taskset -p``, a cgroup cpuset); ``moved`` maps a CPU pair to its moves,
    ``(the CPU the thread was pinned to, the CPU it ran on)``. None when nothing was moved."""
    if not moved:
        return None
    pairs = sorted(moved)
    a, b = pairs[0]
    pinned, ran = moved[pairs[0]][0]
    where = f"CPU {ran}" if ran is not None and ran >= 0 else "another CPU"
    which = f"{a}-{b}" if len(pairs) == 1 else f"{_example(pairs)}; e.g. {a}-{b}"
    return (f"{_n(len(pairs))} {_were(len(pairs))} measured again because something outside corelat moved "
            f"a measuring thread off its CPU ({which}: the thread pinned to CPU {pinned} ran on {where}): "
            f"taskset -p, a cgroup cpuset or a CPU taken offline. Each was measured again on freshly pinned "
            f"threads, but whatever moved them may still be disturbing the machine; "
            f"result.extras['moved'] counts the moves per pair")


def stop_lines(stopped, kept, attempts):
    """``(warnings, notes)`` on pairs measured while the whole process was stopped and continued
    (Ctrl-Z and ``fg``, SIGSTOP and SIGCONT): ``stopped`` the CPU pairs measured again, ``kept``
    those whose last of ``attempts`` still held a stop (its samples include it)."""
    warnings, notes = [], []
    again = sorted(set(stopped) - set(kept))
    if again:
        notes.append(f"The process was stopped and continued (Ctrl-Z and fg, or SIGSTOP and SIGCONT) while "
                     f"{_n(len(again))} {_were(len(again))} measured ({_example(again)}); "
                     f"{'it was' if len(again) == 1 else 'they were'} measured again")
    if kept:
        kept = sorted(kept)
        warnings.append(f"The process was stopped and continued during each of {attempts} attempts at "
                        f"{_n(len(kept))} ({_example(kept)}): the last attempt is kept and its samples "
                        f"include a stop (a sample that long is the stop, not a latency); measure again")
    return warnings, notes
