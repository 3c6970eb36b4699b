"""The latency groups against the OS topology: which OS objects (L2, cluster, L3, die, NUMA node,
package, core) a level's groups match, and the sentence that says so."""

from __future__ import annotations

from dataclasses import dataclass

from corelat._analysis.phrases import _cpus, _join
from corelat._core.protocol import thaw
from corelat._system.topology import Topology

#: Topology keys compared with the latency groups, with their names in sentences.
TOPOLOGY_KEYS = (("l2", "L2 caches"), ("cluster", "clusters"), ("l3", "L3 caches"), ("die", "dies"),
                 ("node", "NUMA nodes"), ("package", "packages"))


@dataclass(frozen=True)
class TopologyComparison:
    """How the latency groups line up with the OS topology.

    ``matches`` maps a topology key (``"l3"``, ``"node"``, ``"package"``, ``"core"``) to the index of
    the level with the same partition (``"smt"`` for the core key when SMT siblings match);
    ``mismatches`` maps the keys with no matching level to a short explanation; ``unmatched_levels``
    lists levels that correspond to no topology grouping. ``agrees`` is True when nothing mismatches.
    """

    matches: dict
    mismatches: dict
    unmatched_levels: tuple
    sentence: str

    @property
    def agrees(self):
        return not self.mismatches and not self.unmatched_levels

    def to_dict(self):
        return {
            "agrees": self.agrees,
            "matches": dict(self.matches),
            "mismatches": dict(self.mismatches),
            "unmatched_levels": list(self.unmatched_levels),
            "sentence": self.sentence,
        }


def _os_matches(groups, split, kind, names, records, cpus):
    """The OS objects whose partition this level equals (on its refined part when partial)."""
    if not records:
        return ()
    sets = [frozenset(g) for g in groups]
    whole = frozenset(cpus)
    core_part = _partition(records, "core", cpus)
    out = []
    for key, _ in TOPOLOGY_KEYS:
        part = _partition(records, key, cpus)
        if part is None or part == frozenset([whole]) or part == core_part:
            continue
        if all(split):
            hit = frozenset(sets) == part
        else:  # a partial level (or one with a rest) matches on the part it names
            hit = any(split) and all(s in part for s, sp in zip(sets, split) if sp)
        if hit:
            out.append(key)
    if kind == "classes" and names:
        out.append("classes")
    return tuple(out)


def _topology_records(result, topology):
    """(records, note): the OS topology's per-CPU records, or None and why there are none."""
    if topology is not None:
        if hasattr(topology, "records"):
            return list(topology.records()), ""
        return list(topology), ""
    md = result.metadata.get("topology") if hasattr(result, "metadata") else None
    if not md:
        return None, ""
    try:
        return list(Topology.from_dict(thaw(md)).records()), ""
    except (ValueError, TypeError, KeyError) as e:
        return None, f"The result's OS topology is unreadable ({e})."


def _partition(records, key, cpus):
    """Partition of ``cpus`` (as a set of frozensets) by a record key, or None when incomplete."""
    by_cpu = {r.get("cpu"): r for r in records}
    groups = {}
    for c in cpus:
        r = by_cpu.get(c)
        if r is None or r.get(key) is None:
            return None
        v = r[key]
        if isinstance(v, (list, tuple)):
            v = tuple(v)
        groups.setdefault(v, set()).add(c)
    return frozenset(frozenset(g) for g in groups.values())


def _relation(lat, topo):
    """'equal', 'finer' (latency groups split topology groups), 'coarser', or 'different'."""
    if lat == topo:
        return "equal"
    if all(any(g <= t for t in topo) for g in lat):
        return "finer"
    if all(any(t <= g for g in lat) for t in topo):
        return "coarser"
    return "different"


def compare_topology(st, records):
    """Compare a :class:`Structure` with OS topology records (``Topology.records()``)."""
    singles = frozenset(frozenset([c]) for c in st.cpus)
    lat_parts = [frozenset(frozenset(g) for g in lv.groups) for lv in st.levels]
    core_part = _partition(records, "core", st.cpus)
    matches, mismatches, per_level = _compare_os_keys(st, records, lat_parts, core_part)
    said_miss = list(mismatches.values())
    _add_class_levels(st, matches, per_level)
    unmatched = tuple(k for k in range(len(lat_parts)) if k not in per_level)
    sentences = _level_sentences(per_level, unmatched, lat_parts)
    verdict = _compare_cores(st, core_part, singles)
    if verdict is not None:
        agrees, said = verdict
        if agrees:
            matches["core"] = "smt"
        else:
            mismatches["core"] = said
        sentences.append(said)
    sentences.extend(said_miss)
    if not sentences:
        sentences.append("the OS topology has no grouping to compare with")
    text = "; ".join(sentences)
    text = text[0].upper() + text[1:] + "."
    return TopologyComparison(matches=matches, mismatches=mismatches,
                              unmatched_levels=unmatched, sentence=text)


def _compare_os_keys(st, records, lat_parts, core_part):
    """``(matches, mismatches, per_level)`` for the OS groupings of TOPOLOGY_KEYS.

    ``per_level`` maps a level index to what it matches, in words (``["2 L3 caches"]``).
    """
    cpus = st.cpus
    whole = frozenset([frozenset(cpus)])
    singles = frozenset(frozenset([c]) for c in cpus)
    matches, mismatches, per_level = {}, {}, {}
    for key, label in TOPOLOGY_KEYS:
        part = _partition(records, key, cpus)
        if part is None or part in (whole, singles, core_part):
            continue  # unknown, one group for all measured CPUs, or per core: nothing to compare
        k = next((i for i, lv in enumerate(st.levels) if key in lv.os), None)
        if k is None:
            mismatches[key] = _mismatch(lat_parts, part, label)
        else:
            matches[key] = k
            per_level.setdefault(k, []).append(_matched_words(st.levels[k], len(part), label))
    return matches, mismatches, per_level


def _matched_words(lv, count, label):
    """Words like "2 L3 caches", naming the CPUs when the level matches on part of them only."""
    idx = lv.named()
    if len(idx) < len(lv.groups):
        count = len(idx)
        label += f" in CPUs {_cpus(sorted(c for i in idx for c in lv.groups[i]))}"
    return f"{count} {label}"


def _mismatch(lat_parts, part, label):
    """Why no latency level matches the OS's ``part``, in words."""
    count = len(part)
    if not lat_parts:
        return f"the OS reports {count} {label} but the latency shows no grouping"
    rel = _relation(lat_parts[0], part)
    if rel == "finer":
        return f"latency groups split the OS's {count} {label} further"
    if rel == "coarser":
        return f"latency groups span several of the OS's {count} {label}"
    return f"latency groups cut across the OS's {count} {label}"


def _add_class_levels(st, matches, per_level):
    """Note the levels that split the CPUs by core type (the first one is the "classes" match)."""
    for k, lv in enumerate(st.levels):
        if "classes" in lv.os:
            matches.setdefault("classes", k)
            per_level.setdefault(k, []).append("core types (" + _join(list(lv.names)) + ")")


def _level_sentences(per_level, unmatched, lat_parts):
    """What each level matches, then the levels that match nothing."""
    def who(k):
        return "latency groups" if len(lat_parts) == 1 else f"latency level {k + 1}"

    sentences = [f"{who(k)} match the OS's {_join(what)}" for k, what in sorted(per_level.items())]
    sentences += [f"{who(k)} ({len(lat_parts[k])}) match no OS grouping (L2, cluster, L3, die, NUMA "
                  "node, package)" for k in unmatched]
    return sentences


def _compare_cores(st, core_part, singles):
    """SMT siblings against the OS's cores: None (nothing to compare) or (agrees, sentence)."""
    smt_part = frozenset(frozenset(c) for c in st.cores)
    if core_part is not None and core_part != singles:
        if smt_part == core_part:
            return True, "SMT siblings match the OS's cores"
        return False, ("the OS reports SMT siblings the latency does not show" if not st.smt_pairs
                       else "SMT siblings differ from the OS's cores")
    if core_part is not None and st.smt_pairs:
        return False, "latency shows SMT siblings the OS does not report"
    return None
