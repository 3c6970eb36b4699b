"""SMT siblings read off a latency matrix: pairs (or groups) clearly faster than the rest, fast in
absolute terms, and following one numbering rule across the machine."""

from __future__ import annotations

import numpy as np

from corelat._analysis.ostopology import _partition
from corelat._analysis.phrases import _ns

#: Siblings must be at least this many times faster than the CPU's fastest non-sibling. Published
#: matrices show 2x (Zen 3, 7.5 vs 15 ns) to 6x (Cascade Lake, 7 vs 43 ns); not the "order of
#: magnitude" of folklore, but far above the few percent a flat matrix varies by.
SMT_RATIO = 1.6
#: Typical sibling hand-off must be at most this (siblings share an L1: published values are 4-10 ns,
#: single pairs up to 13 ns; separate cores sharing an L3 or L2 start at 15 ns on the fastest chips).
SMT_MAX_NS = 12.5
#: Once a machine has SMT, the gap that admits further sibling groups (noisy rows).
SMT_RATIO_WEAK = 1.25
#: A sibling group may be this many times slower than the machine's typical sibling latency.
SMT_GROUP_SPREAD = 2.0
#: Largest number of hardware threads per core considered (POWER has SMT8).
SMT_MAX_THREADS = 8


def _smt_groups(d):
    """Index groups of SMT siblings (mutual, clearly faster than the rest, fast in absolute terms)."""
    groups = set(_mutual(_gap_claims(d)))
    if not groups:
        return []
    # Relative speed alone cannot tell siblings from a cluster of separate cores (a Zen CCX with
    # SMT off, an Apple cluster): the whole machine decides by absolute speed. A single slower pair
    # (a noisy CPU 0) is kept as long as it stays near the machine's typical sibling latency.
    lat = {g: float(np.nanmedian([d[i, j] for i in g for j in g if i < j])) for g in groups}
    typical = float(np.median(list(lat.values())))
    if typical > SMT_MAX_NS:
        return []
    groups = {g for g in groups if lat[g] <= SMT_GROUP_SPREAD * typical}
    groups.update(_mutual(_weak_claims(d, groups, typical)))
    return [tuple(sorted(g)) for g in groups]


def _mutual(claim):
    """The claimed groups whose every member claims that same group (in claim order)."""
    return [g for g in claim.values() if all(claim.get(j) == g for j in g)]


def _sorted_row(row):
    """Indices of ``row``'s measured partners, nearest first, and their latencies."""
    idx = np.flatnonzero(~np.isnan(row))
    order = idx[np.argsort(row[idx], kind="stable")]
    return order, row[order]


def _gap_claims(d):
    """Per CPU, the group it claims: itself and the partners before a clear gap (SMT_RATIO)."""
    claim = {}
    for i in range(d.shape[0]):
        order, vals = _sorted_row(d[i])
        if order.size < 2:
            continue  # nothing to compare the nearest partner with
        for s in range(1, min(SMT_MAX_THREADS, vals.size)):
            # s siblings, then a clear gap to the fastest non-sibling
            if vals[s - 1] <= 0:
                break
            if vals[s] / vals[s - 1] >= SMT_RATIO:
                claim[i] = frozenset([i, *order[:s].tolist()])
                break
    return claim


def _weak_claims(d, groups, typical):
    """Second pass, now that the machine has SMT: the claims of the CPUs left over.

    CPUs whose sibling gap noise narrowed below SMT_RATIO still join when they and their nearest
    partners name each other, are as fast as the other siblings and clearly (SMT_RATIO_WEAK)
    faster than the rest.
    """
    size = int(np.median([len(g) for g in groups]))
    taken = {i for g in groups for i in g}
    nearest = {}
    for i in range(d.shape[0]):
        if i in taken:
            continue
        order, vals = _sorted_row(d[i])
        if order.size < size:
            continue
        if vals[size - 2] > SMT_GROUP_SPREAD * typical or vals[size - 1] < SMT_RATIO_WEAK * vals[size - 2]:
            continue
        nearest[i] = frozenset([i, *order[: size - 1].tolist()])
    return nearest


def _rule_of(group):
    """(stride, size) of the numbering rule a sibling group (sorted CPU ids) follows, or None.

    Linux numbers the hardware threads of a machine one of two ways: adjacent (cpu XOR 1: 0,1 and
    2,3; SMT4 0-3) or one thread of every core first (cpu + N/2: 0,16 and 1,17). Both are
    ``{b, b + S, ..., b + (k - 1) S}`` with ``(b // S) % k == 0``.
    """
    k, b = len(group), group[0]
    stride = group[1] - b
    if stride <= 0 or (b // stride) % k or any(group[j] != b + j * stride for j in range(k)):
        return None
    return stride, k


def _rule_group(cpu, rule):
    stride, k = rule
    b = cpu - ((cpu // stride) % k) * stride
    return tuple(b + j * stride for j in range(k))


def _smt_rule(d, groups, cpus, records):
    """(sibling index groups, note): the groups that follow one numbering rule across the machine
    (or are the OS's cores), completed by the rule where a noisy pair was missed.

    Fast pairs that follow no rule are not SMT siblings (separate cores sharing an L2 in a
    scrambled numbering, a tile) unless the OS says they are cores: they are left to the levels,
    and the note says why.
    """
    if not groups:
        return groups, ""
    ids = [tuple(sorted(cpus[i] for i in g)) for g in groups]
    os_cores = _partition(records, "core", cpus) if records else None
    confirmed = [os_cores is not None and frozenset(g) in os_cores for g in ids]
    rules = [_rule_of(g) for g in ids]
    counts = {}
    for r in rules:
        if r is not None:
            counts[r] = counts.get(r, 0) + 1
    rule = max(counts, key=lambda r: (counts[r], -r[0])) if counts else None
    fits = rule is not None and (counts[rule] >= 2 or rule[1] * 2 >= len(cpus)) \
        and 3 * counts[rule] >= 2 * len(groups)
    keep = [g for g, r, ok in zip(groups, rules, confirmed) if ok or (fits and r == rule)]
    note = ""
    if not keep:
        lat = np.nanmedian([d[i, j] for g in groups for i in g for j in g if i < j])
        shown = ", ".join("(" + ",".join(map(str, g)) + ")" for g in sorted(ids)[:4])
        note = (f"CPUs {shown}{' ...' if len(ids) > 4 else ''} pair up as fast as SMT siblings "
                f"({_ns(float(lat))}) but follow no numbering rule (n and n+1, n and n+N/2) "
                "and the OS does not confirm them as cores: read as a level of pairs, not as SMT siblings")
        return [], note
    if fits:
        keep = _complete(d, keep, rule, cpus)
    return keep, note


def _complete(d, groups, rule, cpus):
    """Add the sibling groups the rule predicts among CPUs left out, where they are as fast as the
    machine's siblings and (within 10 %) the fastest partners their members have (a quantised timer
    ties CPU 28's sibling with two cores of its CCX)."""
    typical = float(np.median([np.nanmedian([d[i, j] for i in g for j in g if i < j]) for g in groups]))
    pos = {c: i for i, c in enumerate(cpus)}
    taken = {i for g in groups for i in g}
    out = list(groups)
    for c in cpus:
        if pos[c] in taken:
            continue
        want = [pos.get(x) for x in _rule_group(c, rule)]
        if None in want or taken & set(want):
            continue
        inside = d[np.ix_(want, want)][~np.eye(len(want), dtype=bool)]
        rest = np.delete(d[want], want, axis=1)
        if np.isnan(inside).any() or np.isnan(rest).all():
            continue
        if inside.max() <= SMT_GROUP_SPREAD * typical and inside.max() <= 1.1 * float(np.nanmin(rest)):
            out.append(tuple(sorted(want)))
            taken.update(want)
    return out
