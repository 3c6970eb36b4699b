"""Levels of grouping: the :class:`Level` value, how levels are built from the blocks' core labels
(latencies, nesting, classes of cores, the OS objects they match), and the artifacts they reveal."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from corelat._analysis.ostopology import _os_matches
from corelat._analysis.phrases import _cpus, _group_phrase, _join, _jsonable, _ns, _num, _uniform_threads

#: A group's subgroups this close to as far apart as the group is from others are "as slow inside as
#: across" (the artifact test); a same-shaped group below FAST_INSIDE of it is "fast inside".
SLOW_INSIDE = 0.9
FAST_INSIDE = 0.75
#: Groups of one level whose inside latencies differ by this factor are described one by one.
LOPSIDED = 1.3


@dataclass(frozen=True)
class Level:
    """One level of grouping: a partition of all CPUs, with typical latencies in ns.

    ``within`` is the median latency between different cores of the same group that lie in different
    groups one level finer (different cores at the finest level); ``across`` the median latency
    between groups that share the next coarser group (between all groups at the coarsest level).
    ``cores`` is the number of cores per group, ``threads`` the hardware threads per core where they
    are uniform (else None).

    Levels nest: ``parent`` is the index in ``Structure.levels`` of the next coarser level (None at
    the coarsest) and ``group_parent[i]`` the index of group i's group there. ``split[i]`` is False
    where group i is the whole of its parent group (a level may refine only part of the machine: the
    E-core clusters of a hybrid part, not its P-cores). ``group_within[i]`` (with its range
    ``group_range[i]``) and ``group_across[i]`` are the two latencies for group i alone (NaN where
    it has no subgroups); ``group_cores[i]`` is the (median, min, max) latency between different
    cores anywhere inside group i (what a class of P-cores that no finer level splits is inside);
    ``rest[i]`` is True where group i is what is left when the other groups are taken out: as far
    apart inside as across while the others are fast inside (the P-cores beside two E-core
    clusters); the level is named and counted by the other groups. ``children[i]`` counts its groups
    one level finer (its cores at the finest level). ``kind`` is ``"classes"`` when the groups differ
    in kind of core (threads per core, or L2 sharing in the OS topology), with ``names`` such as
    ``("P-cores", "E-cores")`` where the OS topology tells; ``os`` names the OS objects the level
    matches (``("l3",)``, ``("node", "package")``, ``("classes",)``), empty when none or unknown.
    """

    groups: tuple
    within: float
    across: float
    cores: tuple
    threads: object = None
    parent: object = None
    group_parent: tuple = ()
    split: tuple = ()
    group_within: tuple = ()
    group_range: tuple = ()
    group_across: tuple = ()
    children: tuple = ()
    group_threads: tuple = ()
    group_cores: tuple = ()
    rest: tuple = ()
    kind: str = "groups"
    names: tuple = ()
    os: tuple = ()
    finest: bool = False

    def named(self):
        """Indices of the groups the level speaks for: those it refines (all unless ``partial``),
        less the ``rest``."""
        return [i for i in range(len(self.groups))
                if (not self.split or self.split[i]) and not (self.rest and self.rest[i])]

    @property
    def sizes(self):
        """Number of CPUs per group."""
        return tuple(len(g) for g in self.groups)

    @property
    def inverted(self):
        """True when the groups are slower inside than across (a line bounced inside a shared L2)."""
        return bool(self.within > self.across)

    @property
    def partial(self):
        """True when some groups are the whole of their parent group (only part of it is refined)."""
        return bool(self.split) and not all(self.split)

    def describe(self):
        """E.g. ``2 groups of 16 CPUs (8 cores × 2 threads): 17 ns within, 85 ns across``."""
        if self.kind == "classes":
            return self._describe_classes()
        idx = [i for i, s in enumerate(self.split) if s] if self.partial else list(range(len(self.groups)))
        groups = [self.groups[i] for i in idx]
        head = _group_phrase(groups, tuple(self.cores[i] for i in idx), self.threads)
        if self.partial:
            parents = sorted({c for i in idx for c in self.groups[i]})
            head = f"CPUs {_cpus(parents)} in {head}"
        inside = self._lopsided(idx)
        if inside:
            text = f"{head}: {_ns(self.across)} across; {inside}"
        else:
            text = f"{head}: {_ns(self.within)} within, {_ns(self.across)} across"
        if self.inverted:
            text += " (slower within than across)"
        return text

    def _lopsided(self, idx):
        """Group-by-group inside latencies when they differ (one socket's CCDs twice as far apart as
        the other's): a median would fit neither. Empty when they agree."""
        vals = [self.group_within[i] for i in idx if not math.isnan(self.group_within[i])]
        if len(vals) < 2 or max(vals) < LOPSIDED * min(vals):
            return ""
        parts = []
        for i in idx:
            w, (lo, hi) = self.group_within[i], self.group_range[i]
            if math.isnan(w):
                continue
            sub = f"its {self.children[i]} {'cores' if self.finest else 'subgroups'}"
            if w >= SLOW_INSIDE * self.group_across[i]:
                parts.append(f"within CPUs {_cpus(self.groups[i])} {sub} are ~{_ns(w)} apart, "
                             f"as far as across ({_ns(self.group_across[i])})")
            else:
                spread = f"{_num(lo)}–{_ns(hi)}" if _num(lo) != _num(hi) else _ns(w)
                parts.append(f"within CPUs {_cpus(self.groups[i])} {sub} are {spread} apart")
        return "; ".join(parts)

    def _describe_classes(self):
        parts = []
        for i, g in enumerate(self.groups):
            t = self.group_threads[i] if self.group_threads else None
            what = self.names[i] if self.names and self.names[i] else "cores"
            mixed = len(set(self.group_threads)) > 1  # threads per core only where they tell classes apart
            kind = "" if not mixed or not t else (f" × {t} threads" if t > 1 else " × 1 thread")
            parts.append(f"{self.cores[i]} {what}{kind} (CPUs {_cpus(g)})")
        text = f"{len(self.groups)} classes of cores: {_join(parts)}; {_ns(self.across)} between classes"
        inside = []
        for i, g in enumerate(self.groups):
            if not math.isnan(self.group_within[i]):
                inside.append(f"{_ns(self.group_within[i])} inside CPUs {_cpus(g)}")
            elif self.group_cores and not math.isnan(self.group_cores[i][0]):
                # A class no finer level splits (the P-cores): its cores among themselves.
                w, lo, hi = self.group_cores[i]
                spread = f" ({_num(lo)}–{_ns(hi)})" if _num(lo) != _num(hi) else ""
                inside.append(f"{_ns(w)} between the cores of CPUs {_cpus(g)}{spread}")
        if inside:
            text += ", " + ", ".join(inside)
        return text

    def to_dict(self):
        return {
            "groups": [list(g) for g in self.groups],
            "within_ns": self.within,
            "across_ns": self.across,
            "cores": list(self.cores),
            "threads": self.threads,
            "parent": self.parent,
            "group_parent": list(self.group_parent),
            "split": list(self.split),
            "group_within_ns": [_jsonable(v) for v in self.group_within],
            "group_range_ns": [[_jsonable(a), _jsonable(b)] for a, b in self.group_range],
            "group_across_ns": [_jsonable(v) for v in self.group_across],
            "children": list(self.children),
            "group_threads": list(self.group_threads),
            "group_cores_ns": [[_jsonable(v) for v in t] for t in self.group_cores],
            "rest": list(self.rest),
            "kind": self.kind,
            "names": list(self.names),
            "os": list(self.os),
            "inverted": self.inverted,
            "finest": self.finest,
            "text": self.describe(),
        }


def _make_levels(d, cpus, core_idx, core_of, labels, records):
    """:class:`Level` objects from the blocks' core labels (finest first), with their latencies."""
    if not labels:
        return []
    n = d.shape[0]
    pair_ok = (core_of[:, None] != core_of[None, :]) & ~np.isnan(d)
    threads_of = np.array([len(core_idx[c]) for c in core_of])
    cpu_labels = [lab[core_of] for lab in labels]
    same = [lab[:, None] == lab[None, :] for lab in cpu_labels]
    finer_same = [core_of[:, None] == core_of[None, :]] + same[:-1]
    parts = []
    for lab in cpu_labels:
        part = [np.flatnonzero(lab == g) for g in np.unique(lab)]
        part.sort(key=lambda g: g[0])
        parts.append(part)
    sharing = _l2_sharing(records, cpus)
    core_type = _core_types(records, cpus)
    out = []
    for k, part in enumerate(parts):
        top = k + 1 == len(parts)
        within_mask = pair_ok & same[k] & ~finer_same[k]
        across_mask = pair_ok & ~same[k] & (True if top else same[k + 1])
        gw, gr, ga, ch, gt, gc = [], [], [], [], [], []
        for g in part:
            c = d[np.ix_(g, g)][pair_ok[np.ix_(g, g)]]
            gc.append((float(np.median(c)), float(c.min()), float(c.max())) if c.size else (math.nan,) * 3)
            w = d[np.ix_(g, g)][within_mask[np.ix_(g, g)]]
            a = d[g][across_mask[g]]
            gw.append(float(np.median(w)) if w.size else math.nan)
            gr.append((float(w.min()), float(w.max())) if w.size else (math.nan, math.nan))
            ga.append(float(np.median(a)) if a.size else math.nan)
            finer = cpu_labels[k - 1] if k else core_of
            ch.append(len(set(finer[g].tolist())))
            t = set(threads_of[g].tolist())
            gt.append(t.pop() if len(t) == 1 else None)
        if top:
            gp, split = (), tuple(True for _ in part)
        else:
            up = cpu_labels[k + 1]
            ups = [np.flatnonzero(up == u) for u in np.unique(up)]
            ups.sort(key=lambda g: g[0])
            where = {int(c): i for i, g in enumerate(ups) for c in g}
            gp = tuple(where[int(g[0])] for g in part)
            split = tuple(len(g) < len(ups[p]) for g, p in zip(part, gp))
        # A partial level speaks for the groups it refines (the E-core clusters, not the P-cores).
        rows = np.zeros(n, dtype=bool)
        for g, sp in zip(part, split):
            rows[g] = sp
        w_all, a_all = d[within_mask & rows[:, None]], d[across_mask & rows[:, None]]
        refined = [i for i, sp in enumerate(split) if sp]
        kind, names = _classes([part[i] for i in refined], [gt[i] for i in refined], sharing, core_type)
        if kind == "classes" and len(refined) < len(part):
            names = tuple(names[refined.index(i)] if i in refined and names else "" for i in range(len(part)))
        groups = tuple(tuple(cpus[i] for i in g) for g in part)
        rest = _rest(part, gw, ga, ch)
        out.append(Level(
            groups=groups,
            within=float(np.median(w_all)) if w_all.size else math.nan,
            across=float(np.median(a_all)) if a_all.size else math.nan,
            cores=tuple(len(set(core_of[g].tolist())) for g in part),
            threads=_uniform_threads(core_idx) if len(core_idx) < n else None,
            parent=None if top else k + 1,
            group_parent=gp,
            split=split,
            group_within=tuple(gw),
            group_range=tuple(gr),
            group_across=tuple(ga),
            children=tuple(ch),
            group_threads=tuple(gt),
            group_cores=tuple(gc),
            kind=kind,
            names=names,
            rest=rest,
            os=(_os_matches(groups, split, kind, names, records, cpus)
                or (_os_matches(groups, tuple(sp and not r for sp, r in zip(split, rest)), kind,
                                names, records, cpus)
                    if any(rest) else ())),
            finest=k == 0,
        ))
    return out


def _rest(part, gw, ga, ch):
    """Per group: True when it is what is left of the machine (as far apart inside as across)
    beside groups that are fast inside, none of its own shape (that would be an artifact)."""
    slow = [c > 1 and not math.isnan(w) and w >= SLOW_INSIDE * a for w, a, c in zip(gw, ga, ch)]
    fast = [not math.isnan(w) and w <= FAST_INSIDE * a for w, a in zip(gw, ga)]
    shape = [(c, len(g)) for g, c in zip(part, ch)]
    if not any(fast):
        return tuple(False for _ in part)
    return tuple(sl and not any(f and shape[j] == shape[i] for j, f in enumerate(fast))
                 for i, sl in enumerate(slow))


def _l2_sharing(records, cpus):
    """{cpu index: number of OS cores sharing its L2} from topology records, or None."""
    if not records:
        return None
    by_cpu = {r.get("cpu"): r for r in records}
    cores_of_l2 = {}
    for r in records:
        if r.get("l2") is not None and r.get("core") is not None:
            cores_of_l2.setdefault(r["l2"], set()).add(r["core"])
    out = {}
    for i, c in enumerate(cpus):
        r = by_cpu.get(c)
        if r is None or r.get("l2") is None:
            return None
        out[i] = len(cores_of_l2.get(r["l2"], ()))
    return out


def _core_types(records, cpus):
    """{cpu index: name} from records that say what kind of core each CPU is, or None.

    ``core_type`` ("core"/"atom": the ``cpus`` of /sys/devices/cpu_core and cpu_atom) names P- and
    E-cores; ``capacity`` (sysfs ``cpu_capacity``, Arm big.LITTLE) names the larger "big" and the
    rest "LITTLE". corelat's topology reader records both where sysfs has them.
    """
    if not records:
        return None
    by_cpu = {r.get("cpu"): r for r in records}
    rows = [by_cpu.get(c) or {} for c in cpus]
    types = [r.get("core_type") for r in rows]
    if all(t in ("core", "atom") for t in types) and len(set(types)) > 1:
        return {i: "P-cores" if t == "core" else "E-cores" for i, t in enumerate(types)}
    caps = [r.get("capacity") for r in rows]
    if all(isinstance(c, (int, float)) for c in caps) and len(set(caps)) > 1:
        top = max(caps)
        return {i: "big cores" if c == top else "LITTLE cores" for i, c in enumerate(caps)}
    return None


def _classes(part, group_threads, sharing, core_type=None):
    """("classes", names) when the groups hold different kinds of core, else ("groups", ())."""
    if core_type is not None and len(part) > 1:
        named = []
        for g in part:
            t = {core_type[int(i)] for i in g}
            named.append(t.pop() if len(t) == 1 else None)
        if None not in named and len(set(named)) == len(named) > 1:
            return "classes", tuple(named)
    kinds = [group_threads[i] for i in range(len(part))]
    shares = None
    if sharing is not None:
        shares = []
        for g in part:
            s = {sharing[int(i)] for i in g}
            shares.append(s.pop() if len(s) == 1 else None)
    # Classes are groups that differ from each other as a whole: one group per kind of core. Groups
    # of one kind (packages, one of them with CPUs offline) are groups even where threads differ.
    differ_threads = None not in kinds and len(set(kinds)) == len(kinds) > 1
    differ_l2 = shares is not None and None not in shares and len(set(shares)) == len(shares) > 1
    if not (differ_threads or differ_l2):
        return "groups", ()
    names = ()
    if differ_l2 and len(part) == 2:
        # Hybrid x86 parts: P-cores have an L2 of their own, E-cores share one per cluster.
        names = tuple("P-cores" if s == 1 else "E-cores" for s in shares)
        if len(set(names)) < 2:
            names = ()
    return "classes", names


def _artifacts(levels, result):
    """Sentences for parts as slow inside as across while a part of the same shape is fast inside."""
    out = []
    for lv in levels:
        shape = {}
        for i, g in enumerate(lv.groups):
            if (lv.children[i] > 1 and not math.isnan(lv.group_within[i])
                    and not math.isnan(lv.group_across[i])):
                shape.setdefault((lv.children[i], len(g)), []).append(i)
        for same in shape.values():
            slow = [i for i in same if lv.group_within[i] >= SLOW_INSIDE * lv.group_across[i]]
            fast = [i for i in same if lv.group_within[i] <= FAST_INSIDE * lv.group_across[i]]
            if not (slow and fast):
                continue
            s, f = slow[0], fast[0]
            text = (f"CPUs {_cpus(lv.groups[s])} are as slow among their {lv.children[s]} subgroups "
                    f"(~{_ns(lv.group_within[s])}) as across to the rest, while CPUs {_cpus(lv.groups[f])}, "
                    f"of the same shape, are {_ns(lv.group_within[f])} apart inside: the signature of a line "
                    "homed on one node's memory for the whole run, which is what tools that allocate one "
                    "flag up front measure")
            if getattr(result, "value_only", True):
                text += "; corelat's own results (a fresh page per pair) should not show it"
            else:
                text += ("; corelat gives every pair a fresh page, so this result should not show it: "
                         "check the memory placement (numactl, cgroup memory binding)")
            out.append(text)
    return tuple(out)
