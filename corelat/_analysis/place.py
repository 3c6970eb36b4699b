"""Where to put k threads: the k CPUs of a latency matrix that talk fastest (or slowest) to each other.

:func:`place` reads the matrix, not the OS topology: "one L3, one CCD, one socket" is whatever group
of CPUs the measurement shows to be close, which is also right for imported files that carry no
topology. The search minimises the worst pair among the chosen (``close``) or maximises the
smallest (``spread``); both are one problem, the second on the negated matrix.
"""

from __future__ import annotations

import itertools
import math
import operator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

from corelat._analysis.siblings import _smt_groups, _smt_rule
from corelat._analysis.structure import _symmetric
from corelat._core.errors import InputError, InputTypeError
from corelat._system import cpulist as _cpulist

if TYPE_CHECKING:  # annotations only, as structure.py: the results import the analysis' callers
    from corelat._results.latency import LatencyResult

__all__ = ["GOALS", "ThreadPlacement", "pair_latencies", "place"]

#: What :func:`place` can aim for.
GOALS = ("close", "spread")
#: The search is exhaustive while the candidate sets, times the pairs of each, stay below this
#: (every choice from up to 16 candidate CPUs: C(16, 8) x 8 x 8 = 0.8 M values, 7 MB).
EXACT_LIMIT = 2_000_000
#: The greedy search starts from at most this many seeds (evenly spread over the candidates).
MAX_SEEDS = 256
#: Greedy results improved by swaps (the best ones, distinct).
SWAPPED = 4


@dataclass(frozen=True)
class ThreadPlacement:
    """k CPUs chosen by :func:`corelat.place`, their pair latencies and the lines that pin to them.

    Attributes
    ----------
    cpus : tuple of int
        The chosen CPU ids, ascending.
    worst : float
        Largest latency among the chosen pairs, in ns (NaN for one CPU or no measured pair).
    median : float
        Median latency among the chosen pairs, in ns.
    best : float
        Smallest latency among the chosen pairs, in ns.
    goal : str
        ``"close"`` or ``"spread"``.

    Examples
    --------
    >>> import numpy as np, corelat
    >>> m = np.full((4, 4), 80.0)
    >>> m[:2, :2] = m[2:, 2:] = 20.0
    >>> p = corelat.place(corelat.LatencyResult.from_matrix(m), 2, goal="spread")
    >>> p.cpus, p.worst, p.taskset
    ((0, 2), 80.0, 'taskset -c 0,2')
    """

    cpus: tuple[int, ...]
    worst: float
    median: float
    best: float
    goal: str

    @property
    def taskset(self) -> str:
        """The ``taskset`` command prefix that runs a program on these CPUs (``taskset -c 0,2,4``).

        Returns
        -------
        str
        """
        return f"taskset -c {self._list}"

    @property
    def numactl(self) -> str:
        """The ``numactl`` command prefix that binds to these CPUs (``numactl --physcpubind=0,2,4``).

        Returns
        -------
        str
        """
        return f"numactl --physcpubind={self._list}"

    @property
    def omp_places(self) -> str:
        """The OpenMP environment setting, one place per CPU (``OMP_PLACES={0},{2},{4}``).

        Returns
        -------
        str
        """
        return "OMP_PLACES=" + ",".join(f"{{{c}}}" for c in self.cpus)

    @property
    def srun(self) -> str:
        """Slurm's binding of one task per CPU (``srun --cpu-bind=map_cpu:0,2,4``).

        Returns
        -------
        str
        """
        return f"srun --cpu-bind=map_cpu:{self._list}"

    @property
    def selector(self) -> str:
        """The CPUs as corelat's ``--cpus`` / ``cpus=`` text, ranges compacted (``0-3,8``).

        Returns
        -------
        str
        """
        return _cpulist.format(self.cpus)

    @property
    def _list(self):
        return ",".join(map(str, self.cpus))

    def __str__(self):
        return (f"{len(self.cpus)} CPUs ({self.goal}): {self.selector}; worst {_ns(self.worst)}, "
                f"median {_ns(self.median)}, best {_ns(self.best)}")


def place(result: LatencyResult, k: int, goal: Literal["close", "spread"] = "close",
          smt: bool = False) -> ThreadPlacement:
    """Choose ``k`` CPUs of a latency matrix: the closest together, or the farthest apart.

    ``close`` minimises the worst pair latency among the chosen (one L3, one CCD, one socket, as the
    matrix shows it): threads that share data. ``spread`` maximises the smallest (one CPU per L3 or
    NUMA node): threads that want bandwidth. Ties go to the smaller sum of the chosen pairs'
    latencies (for ``spread``, the larger). The per-pair median is read, both orientations of a pair
    averaged; a pair never measured counts as the worst a pair can be, so it is avoided.

    By default one CPU per core: the first thread (lowest CPU id) of each core, as the selector word
    ``cores``. Cores come from the result's OS topology where it carries one, else from the SMT
    siblings the matrix shows (:func:`corelat.structure`'s reading).

    The search is exact (every choice) while C(m, k) k² stays below 2 million for m candidate CPUs,
    which covers every machine of up to 16 candidates. Above that it is a heuristic: a greedy
    choice from each of up to 256 seed CPUs (each step adds the CPU that raises the worst pair
    least), vectorised over the seeds, O(k m s) for s seeds; then the best few are improved by
    swapping one chosen CPU for one outside while that lowers the worst pair (or, at equal worst,
    the sum), O(k³ + k m) a pass. On a 256-CPU matrix that is well under a second for every k
    (``benchmarks/place.py``). Block-structured matrices (caches, dies, sockets) come out optimal;
    on arbitrary matrices the heuristic is never worse than its best greedy start nor than the
    naive choice (the first k candidates).

    Parameters
    ----------
    result : LatencyResult
        A measured or loaded result (core-to-core-latency and c2clat files included).
    k : int
        How many CPUs to choose, at least 1.
    goal : {"close", "spread"}
        Keep the chosen CPUs close together, or apart.
    smt : bool
        Allow SMT siblings of one core among the chosen.

    Returns
    -------
    ThreadPlacement
        ``.cpus``, ``.worst``, ``.median``, ``.best`` (ns) and the paste-ready ``.taskset``,
        ``.numactl``, ``.omp_places``, ``.srun`` and ``.selector``.

    Raises
    ------
    InputError
        For an unknown goal, k below 1 or above the CPUs (or cores) there are, or a matrix with no
        measured pair.
    InputTypeError
        For a k that is not an integer or a result that is not a latency matrix.

    Examples
    --------
    Two groups of two cores; two threads that share data belong in one group:

    >>> import numpy as np, corelat
    >>> m = np.full((4, 4), 80.0)
    >>> m[:2, :2] = m[2:, 2:] = 20.0
    >>> m[2, 3] = m[3, 2] = 15.0
    >>> p = corelat.place(corelat.LatencyResult.from_matrix(m), 2)
    >>> p.cpus, p.worst, p.numactl
    ((2, 3), 15.0, 'numactl --physcpubind=2,3')
    """
    if goal not in GOALS:
        raise InputError(f"goal must be one of {', '.join(map(repr, GOALS))}, got {goal!r}")
    if isinstance(k, bool):
        raise InputTypeError(f"k must be an integer, got {k!r}")
    try:
        k = operator.index(k)
    except TypeError:
        raise InputTypeError(f"k must be an integer (how many CPUs), got {k!r}") from None
    if not (hasattr(result, "statistic") and hasattr(result, "cpus")):
        raise InputTypeError(f"place() reads a LatencyResult, got {type(result).__name__}")
    cpus = tuple(result.cpus)
    d = _symmetric(result.statistic("median"))
    d[~np.isfinite(d)] = np.nan
    if np.isnan(d).all():
        raise InputError("the matrix holds no measured pair: nothing to place threads by")
    if k < 1:
        raise InputError(f"k must be at least 1 (how many CPUs to choose), got {k}")
    cand = list(range(len(cpus))) if smt else _one_per_core(result, d, cpus)
    if k > len(cand):
        what = (f"{len(cand)} CPUs" if smt else
                f"{len(cand)} cores ({len(cpus)} CPUs with SMT siblings: smt=True, or --smt, allows them)")
        raise InputError(f"cannot choose {k} CPUs: the result has {what}")
    chosen = [cand[i] for i in _search(_cost(d[np.ix_(cand, cand)], goal), k)]
    worst, median, best = _stats(d, chosen)
    return ThreadPlacement(tuple(sorted(cpus[i] for i in chosen)), worst, median, best, goal)


def pair_latencies(result: LatencyResult, cpus: tuple[int, ...]) -> tuple[float, float, float]:
    """(worst, median, best) latency in ns among the pairs of ``cpus`` (CPU ids of ``result``)."""
    pos = {c: i for i, c in enumerate(result.cpus)}
    missing = [c for c in cpus if c not in pos]
    if missing:
        raise InputError(f"CPU {missing[0]} is not in the result")
    d = _symmetric(result.statistic("median"))
    d[~np.isfinite(d)] = np.nan
    return _stats(d, [pos[c] for c in cpus])


def _stats(d, idx):
    sub = d[np.ix_(idx, idx)][np.triu(np.ones((len(idx), len(idx)), dtype=bool), 1)]
    sub = sub[~np.isnan(sub)]
    if not sub.size:
        return math.nan, math.nan, math.nan
    return float(sub.max()), float(np.median(sub)), float(sub.min())


def _ns(v):
    return "n/a" if math.isnan(v) else f"{v:.1f} ns"


def _one_per_core(result, d, cpus):
    """Matrix indices of the first thread of every core: the OS's cores, else the matrix's SMT groups."""
    topo = result.topology if hasattr(result, "topology") else None
    groups = None
    if topo is not None:
        by_cpu = {r["cpu"]: r for r in topo.records()}
        pos = {c: i for i, c in enumerate(cpus)}
        if all(c in by_cpu for c in cpus):
            groups = {frozenset(pos[s] for s in by_cpu[c]["siblings"] if s in pos) | {pos[c]} for c in cpus}
    if groups is None:
        found, _ = _smt_rule(d, _smt_groups(d), cpus, None)
        taken = {i for g in found for i in g}
        groups = {frozenset(g) for g in found} | {frozenset([i]) for i in range(len(cpus)) if i not in taken}
    return sorted(min(g, key=lambda i: cpus[i]) for g in groups)


def _cost(d, goal):
    """The matrix to minimise the worst pair of: latencies (close) or their negation (spread), an
    unmeasured pair worse than any measured one, the diagonal -inf (never a pair)."""
    m = d.copy() if goal == "close" else -d
    finite = m[~np.isnan(m)]
    worse = float(finite.max()) + float(np.ptp(finite)) + 1.0
    m[np.isnan(m)] = worse
    np.fill_diagonal(m, -np.inf)
    return m


def _objective(m, idx):
    """(worst pair, sum of pairs) of the indices ``idx`` of cost matrix ``m``."""
    sub = m[np.ix_(idx, idx)]
    upper = sub[np.triu(np.ones(sub.shape, dtype=bool), 1)]
    return (float(upper.max()), float(upper.sum())) if upper.size else (-math.inf, 0.0)


def _search(m, k):
    """Indices of ``k`` rows of cost matrix ``m`` whose worst pair is small (exact when affordable)."""
    n = m.shape[0]
    if k == n:
        return list(range(n))
    if k == 1:
        return [0]
    if math.comb(n, k) * k * k <= EXACT_LIMIT:
        return _exact(m, k)
    return _heuristic(m, k)


def _exact(m, k):
    """Every choice of k; the least worst pair, then the least sum, then the first in order."""
    combos = np.array(list(itertools.combinations(range(m.shape[0]), k)), dtype=np.intp)
    sub = m[combos[:, :, None], combos[:, None, :]]
    iu = np.triu_indices(k, 1)
    pairs = sub[:, iu[0], iu[1]]
    worst = pairs.max(axis=1)
    total = pairs.sum(axis=1)
    best = np.flatnonzero(worst == worst.min())
    return combos[best[np.argmin(total[best])]].tolist()


def _heuristic(m, k):
    """Greedy from many seeds, vectorised over them, then swap improvement of the best few. The first
    k rows (the naive choice) compete too: the answer is never worse than them."""
    sets = _greedy(m, k, _seeds(m.shape[0])).tolist() + [list(range(k))]
    scored = sorted({tuple(sorted(s)) for s in sets}, key=lambda s: _objective(m, list(s)))
    improved = [_swap(m, list(s)) for s in scored[:SWAPPED]]
    return min(improved, key=lambda s: (_objective(m, s), sorted(s)))


def _seeds(n):
    if n <= MAX_SEEDS:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, MAX_SEEDS).round().astype(np.intp))


def _greedy(m, k, seeds):
    """(seeds, k) chosen indices: from each seed, add the row that raises the worst pair least (ties:
    the least sum to the chosen)."""
    s = len(seeds)
    rows = np.arange(s)
    chosen = np.empty((s, k), dtype=np.intp)
    chosen[:, 0] = seeds
    worst = m[seeds].copy()  # per seed and candidate, its worst pair with the chosen
    worst[rows, seeds] = np.inf
    total = np.where(np.isfinite(worst), worst, 0.0)
    for step in range(1, k):
        low = worst.min(axis=1, keepdims=True)
        tie = np.where(worst <= low, total, np.inf)
        pick = tie.argmin(axis=1)
        chosen[:, step] = pick
        add = m[pick]
        np.maximum(worst, add, out=worst)
        total += np.where(np.isfinite(add), add, 0.0)
        worst[rows[:, None], chosen[:, :step + 1]] = np.inf
    return chosen


def _swap(m, chosen):
    """Swap one chosen index for one outside while that lowers (worst pair, sum of pairs)."""
    n, k = m.shape[0], len(chosen)
    chosen = list(chosen)
    for _ in range(4 * n):
        inside = np.array(chosen)
        outside = np.setdiff1d(np.arange(n), inside)
        a = m[np.ix_(inside, inside)]
        b = m[np.ix_(inside, outside)]  # chosen x outside
        worst, total = _objective(m, chosen)
        a0 = np.where(np.isfinite(a), a, 0.0)
        # Without chosen i: its worst pair among the rest, and each outsider's worst to the rest.
        keep = ~np.eye(k, dtype=bool)
        w_without = np.array([a[np.ix_(keep[i], keep[i])].max() if k > 2 else -np.inf for i in range(k)])
        order = np.argsort(b, axis=0)
        top, second = order[-1], order[-2]
        b_top = b[top, np.arange(b.shape[1])]
        b_second = b[second, np.arange(b.shape[1])]
        to_rest = np.where(top[None, :] == np.arange(k)[:, None], b_second[None, :], b_top[None, :])
        new_worst = np.maximum(w_without[:, None], to_rest)
        new_total = total - a0.sum(axis=1)[:, None] + b.sum(axis=0)[None, :] - b
        better = (new_worst < worst) | ((new_worst == worst) & (new_total < total - 1e-9 * abs(total)))
        if not better.any():
            break
        cand = np.where(better, new_worst, np.inf)
        i, j = np.unravel_index(np.lexsort((np.where(better, new_total, np.inf).ravel(), cand.ravel()))[0],
                                cand.shape)
        chosen[int(i)] = int(outside[int(j)])
    return chosen
