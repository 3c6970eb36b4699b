"""The order a heatmap draws its CPUs in (OS topology, latency structure, CPU id) and where its
group boundary lines go."""

from __future__ import annotations

from corelat._analysis.structure import structure
from corelat._core.protocol import thaw
from corelat._system.home import one_home
from corelat._system.topology import Topology
from corelat._system.validate import check_order

#: Line widths of group boundaries, coarsest first.
_TOPOLOGY_LINES = (("package", 2.2), ("node", 1.6), ("l3", 1.0))


def _ordered(result, order):
    """(result in that order, [(boundary starts, line width)], note for the title)."""
    check_order(order)
    if order is None:
        return result, [], "CPUs in the result's order"
    if order == "os":
        return result.ordered("os"), [], "CPU order"
    if order == "topology":
        if result.metadata.get("topology"):
            try:

                cpus, bounds = Topology.from_dict(thaw(result.metadata["topology"])).order(result.cpus)
            except (ImportError, ValueError, TypeError, KeyError) as e:
                note = f"topology unusable ({e}): ordered by latency structure"
            else:
                lines = [(bounds.get(level, []), width) for level, width in _TOPOLOGY_LINES]
                drawn = [level.replace("l3", "L3").replace("node", "NUMA node")
                         for (level, _), (starts, _) in zip(_TOPOLOGY_LINES, lines) if starts]
                what = "topology order" + (f"; lines: {', '.join(drawn)}" if drawn else "")
                return result.ordered(cpus), _dedupe(lines), what
        else:
            note = "no topology recorded: ordered by latency structure"
        ordered, lines, _ = _ordered(result, "structure")
        return ordered, lines, note
    if order == "structure":

        st = structure(result)
        bounds = st.boundaries
        k = len(st.levels)
        lines = [(bounds[f"level{i}"], 1.0 + 1.2 * i / max(k - 1, 1)) for i in range(k)]
        what = "latency structure order" + (" (lines: latency groups)" if k else "")
        return result.ordered(st), _dedupe(lines), what


def _one_home(result, home):
    # A placement result holds one matrix per home: draw the one asked for.

    return one_home(result, home, hint="pass home=K, or draw them all with corelat.plot.placement()")


def _dedupe(lines):
    # A boundary shared by several levels (a package that is also a NUMA node) is drawn once, thickest.
    best = {}
    for starts, width in lines:
        for s in starts:
            best[s] = max(best.get(s, 0.0), width)
    return sorted(best.items())
