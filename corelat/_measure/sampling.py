"""Topology-guided sampling: measure enough pairs of each topology block pair, estimate the rest.

On a machine with a regular structure most pairs repeat a few latencies: every pair of CPUs on two
given L3 groups reads about the same. ``measure(strategy="sample")`` sorts the pairs into *classes*
that the topology says should be alike, measures a few pairs of each class, and measures more of a
class (doubling) while its measured pairs disagree; a class whose pairs agree has its remaining pairs
*estimated* as a copy of its most typical measured pair, flagged
:attr:`~corelat._results.latency.PairFlag.ESTIMATED`. Where the topology is wrong (a virtual machine
whose vCPUs the host moves) the pairs disagree and the class ends up fully measured, so the worst case
is a full sweep, not a wrong matrix.

Classes come from ``corelat.topology`` records (keys ``cpu``, ``package``, ``node``, ``l3``, ``l2``,
``core``), or from a plain ``partition`` of the CPUs into blocks given by the caller. This module is
pure Python and never touches the hardware: :class:`Sampler` is driven by whoever measures.
"""

import math

import numpy as np

from corelat._core.errors import InputError
from corelat._system.topology import topology as read_topology

#: Pairs measured first in every class (all of them in smaller classes).
INITIAL_PAIRS = 3
#: A class is settled when (max - min) / median of its measured pairs' medians is at most this.
AGREEMENT = 0.1

# How two CPUs relate, from the closest level they share; the order is the search order.
_RELATIONS = (("core", "smt"), ("l2", "l2"), ("l3", "l3"), ("node", "node"), ("package", "package"))


def _label(v):
    return tuple(v) if isinstance(v, list) else v


def _records(cpus, topology):
    if topology is None:
        try:
            topology = read_topology()
        except Exception:  # noqa: BLE001 - no topology only means coarser classes
            return None
    rows = topology.records() if hasattr(topology, "records") else list(topology)
    by_cpu = {r.get("cpu"): r for r in rows}
    if not all(c in by_cpu for c in cpus):
        return None
    return [by_cpu[c] for c in cpus]


def _block(row):
    """The block a CPU belongs to: its L3 group, else its NUMA node, else its package."""
    for key in ("l3", "node", "package"):
        if row.get(key) is not None:
            return (key, _label(row[key]))
    return None


def _check_partition(cpus, partition):
    block_of = {}
    try:
        parts = [list(p) for p in partition]
    except TypeError:
        raise InputError("partition must be a list of CPU lists, e.g. [[0, 1, 2, 3], [4, 5, 6, 7]]") from None
    for b, part in enumerate(parts):
        for c in part:
            if isinstance(c, bool) or not isinstance(c, (int, np.integer)):
                raise InputError(f"partition: CPU ids must be integers, got {c!r}")
            if int(c) in block_of:
                raise InputError(f"partition: CPU {int(c)} is in more than one block")
            block_of[int(c)] = b
    missing = [c for c in cpus if c not in block_of]
    if missing:
        raise InputError(f"partition: CPUs {missing} being measured are in no block")
    return block_of


def _classifier(cpus, partition, topology):
    """(block label per CPU index, key function of an index pair)."""
    n = len(cpus)
    if partition is not None:
        block_of = _check_partition(cpus, partition)
        blocks = [("block", block_of[c]) for c in cpus]

        def key(i, j):
            if blocks[i] == blocks[j]:
                # A partition says nothing about SMT siblings or clusters inside a block: pairs
                # within one are measured, each its own class (blocks are small; pairs across
                # blocks are where the n² is).
                return ("within", blocks[i], i, j)
            a, b = sorted((blocks[i], blocks[j]))
            return ("blocks", a, b)

        return blocks, key
    rows = _records(cpus, topology)
    if rows is None:
        return [None] * n, lambda i, j: ("all",)
    blocks = [_block(r) for r in rows]

    def key(i, j):
        ra, rb = rows[i], rows[j]
        if blocks[i] == blocks[j] and (ra.get("core") is None or rb.get("core") is None):
            return ("within", blocks[i], i, j)  # unknown cores: siblings cannot be told apart
        rel = "none"
        for field, name in _RELATIONS:
            va, vb = ra.get(field), rb.get(field)
            if va is not None and _label(va) == _label(vb):
                rel = name
                break
        a, b = sorted((blocks[i], blocks[j]), key=repr)
        return (rel, a, b)

    return blocks, key


def cpu_blocks(cpus, partition=None, topology=None):
    """The block label of each CPU of ``cpus`` (None where unknown), as :func:`pair_classes` sees it."""
    return _classifier([int(c) for c in cpus], partition, topology)[0]


def pair_classes(cpus, partition=None, topology=None):
    """Group the lower-triangle index pairs ``(i, j)``, i > j, of ``cpus`` into classes.

    With ``partition`` (a list of CPU lists covering ``cpus``) a class is an unordered pair of
    different blocks, and every pair within a block is a class of its own (measured: a partition
    does not say which CPUs inside a block are SMT siblings). Otherwise the topology (``topology``
    records or a ``Topology``; None reads this machine's) decides: a class is how closely the two
    CPUs are related (SMT siblings, shared L2, shared L3, same NUMA node, same package, nothing)
    together with the unordered pair of their blocks (L3 groups). Without either, every pair is in one class.

    Returns ``{key: [(i, j), ...]}`` with keys in first-seen order and pairs in sweep order.
    """
    cpus = [int(c) for c in cpus]
    _, key = _classifier(cpus, partition, topology)
    classes = {}
    for i in range(1, len(cpus)):
        for j in range(i):
            classes.setdefault(key(i, j), []).append((i, j))
    return classes


def index_pairs(cpus, first):
    """The hook's pairs as index pairs ``(i, j)``, i > j, of ``cpus``, in its order: ``first`` maps
    a class (any label: a reference's) to the CPU id pairs ``(a, b)`` it needs first, most needed
    first; the classes are interleaved (the first pair of every class, then the second, ...).
    Pairs of CPUs not measured, and repeats, are left out."""
    if not first:
        return []
    at = {int(c): k for k, c in enumerate(cpus)}
    lists = []
    for pairs in first.values():
        picked = []
        for a, b in pairs:
            i, j = at.get(int(a)), at.get(int(b))
            if i is not None and j is not None and i != j:
                picked.append((max(i, j), min(i, j)))
        lists.append(picked)
    out, seen = [], set()
    for rank in range(max(map(len, lists), default=0)):
        for picked in lists:
            if rank < len(picked) and picked[rank] not in seen:
                seen.add(picked[rank])
                out.append(picked[rank])
    return out


def budget_order(pairs, class_of, first=()):
    """``pairs`` in the order a time budget measures them: ``first`` (index pairs a caller needs,
    in its order) before the rest, then one pair of every class, then a second of every class,
    ... (classes in first-seen order, each class's pairs in the order given)."""
    wanted = {p: k for k, p in enumerate(first)}
    rank, count = {}, {}
    for p in pairs:
        if p in wanted:
            continue
        seen = count.setdefault(class_of[p], [len(count), 0])  # [the class's place, its pairs so far]
        rank[p] = (seen[1], seen[0])
        seen[1] += 1
    head = sorted((p for p in pairs if p in wanted), key=wanted.__getitem__)
    return head + sorted((p for p in pairs if p not in wanted), key=rank.__getitem__)


class Sampler:
    """Decides which pairs to measure, class by class, from the values measured so far.

    Use: ``while batch := s.next_batch(): for p in batch: s.report(p, value)``; then
    :meth:`estimates` maps every pair that was not measured to the measured pair standing in for it.
    ``value`` is the pair's median (NaN when nothing valid was measured, which counts as
    disagreement). ``first``: index pairs measured first in their class (see :func:`index_pairs`).
    """

    def __init__(self, classes, *, initial=INITIAL_PAIRS, agreement=AGREEMENT, seed=0, first=()):
        if initial < 1:
            raise InputError("initial pairs per class must be at least 1")
        if not agreement > 0:
            raise InputError("agreement must be a positive fraction")
        self.classes = {k: list(v) for k, v in classes.items()}
        self.initial, self.agreement = int(initial), float(agreement)
        rng = np.random.default_rng(seed)
        # A random order per class: the first picks spread over the blocks, not the first rows.
        self._queue = {k: [v[t] for t in rng.permutation(len(v))] for k, v in self.classes.items()}
        if first:  # the pairs a caller needs first lead their class's queue (stable sort)
            wanted = {p: k for k, p in enumerate(first)}
            for q in self._queue.values():
                q.sort(key=lambda p: wanted.get(p, len(wanted)))
        self.values = {}  # pair -> median
        self._pending = set()

    def _spread(self, key):
        vals = np.array([self.values[p] for p in self.classes[key] if p in self.values], dtype=float)
        if vals.size == 0 or np.isnan(vals).any():
            return math.inf
        med = float(np.median(vals))
        if not med > 0:
            return math.inf
        return float((vals.max() - vals.min()) / med)

    def settled(self, key):
        """True when nothing more will be measured in this class."""
        if not self._queue[key]:
            return True
        done = [p for p in self.classes[key] if p in self.values]
        return len(done) >= min(self.initial, len(self.classes[key])) and self._spread(key) <= self.agreement

    def next_batch(self):
        """Pairs to measure next (empty when every class is settled)."""
        if self._pending:
            raise RuntimeError("report every pair of the previous batch first")
        batch = []
        for key, queue in self._queue.items():
            if self.settled(key):
                continue
            measured = sum(1 for p in self.classes[key] if p in self.values)
            take = self.initial if measured == 0 else measured  # then double
            batch += queue[:take]
            del queue[:take]
        self._pending = set(batch)
        return batch

    def report(self, pair, value):
        """Record the median measured for ``pair``."""
        self._pending.discard(pair)
        self.values[pair] = float(value)

    def representative(self, key):
        """The measured pair of a class whose median is closest to the class median."""
        done = [p for p in self.classes[key] if p in self.values and not math.isnan(self.values[p])]
        if not done:
            return None
        med = float(np.median([self.values[p] for p in done]))
        return min(done, key=lambda p: (abs(self.values[p] - med), p))

    def estimates(self):
        """``{pair: measured pair}`` for every pair left unmeasured."""
        out = {}
        for key, pairs in self.classes.items():
            rest = [p for p in pairs if p not in self.values]
            if not rest:
                continue
            rep = self.representative(key)
            if rep is None:
                continue
            for p in rest:
                out[p] = rep
        return out

    @property
    def measured(self):
        """Pairs measured so far."""
        return len(self.values)
