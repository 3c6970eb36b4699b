"""The fleet result's text: its nodes × classes tables and its report in words.

The functions take the :class:`~corelat._results.fleet.FleetResult`, so the value class keeps what it
holds and this module what it prints (as :mod:`corelat._system.topotext` does for a topology).
"""

from __future__ import annotations

from corelat._core import text as _text
from corelat._results.fleet_names import (
    BASELINE_NOT_JUDGED,
    BASELINE_OFF,
    BASELINE_OK,
    MAD_THRESHOLD,
    MIN_GROUP,
    REL_THRESHOLD,
    label,
    short_label,
)


def table(fleet, group=None):
    """The text of :meth:`FleetResult.table <corelat._results.fleet.FleetResult.table>`."""
    flagged = {(o.node, o.cls) for o in fleet.outliers}
    out = []
    for g in fleet.groups:
        if group is not None and g.id != group:
            continue
        header = ["node"] + [short_label(c) for c in g.classes]
        rows = [["(median)"] + [_text.number(g.class_medians[c]) + " " for c in g.classes]]
        for k, node in enumerate(g.nodes):
            rows.append([node] + [_text.number(v) + ("*" if (node, c) in flagged else " ")
                                  for c, v in zip(g.classes, g.values[k])])
        out.append(f"group {g.id}: {g.label}")
        out.extend("  " + line for line in _text.table(header, rows, left=(0,)).splitlines())
        out.append("")
    return "\n".join(out).rstrip()


def describe(fleet, max_rows):
    """The text of :meth:`FleetResult.describe <corelat._results.fleet.FleetResult.describe>`."""
    s = fleet.summary()
    nodes = s["nodes"]
    title = "Fleet" if fleet.name in ("", "fleet") else f"Fleet {fleet.name}"
    head = [(f"{title}: {nodes} node{'s' * (nodes != 1)} in {s['groups']} "
             f"group{'s' * (s['groups'] != 1)}; {_count(s['outliers'], 'outlier')}, "
             f"{_count(s['errors'], 'error')}, {s['missing'] or 'none'} missing")]
    if fleet.baseline is not None:
        head[0] += (f"; against {fleet.baseline.get('reference')}: {s['baseline_off']} off, "
                    f"{s['baseline_not_judged']} not judged")
    md = fleet.metadata
    head.append(f"(an outlier's class median is off its group's median by more than "
                f"max({md.get('rel_threshold', REL_THRESHOLD):.0%}, "
                f"{md.get('mad_threshold', MAD_THRESHOLD):g} robust SD); groups of fewer than "
                f"{md.get('min_group', MIN_GROUP)} nodes are not judged)")
    if not nodes:
        head.append("no node has a result: nothing was judged (see the errors and notes below)")
    dates = sorted(str(r["date"]) for r in fleet.nodes if r.get("date"))
    if dates:  # per node: its record's "date" (to_dict, --json)
        head.append(f"measured from {dates[0]} to {dates[-1]}")
    lines = head + [""]
    for g in fleet.groups:
        meds = ", ".join(f"{label(c)} {ns(g.class_medians[c])}" for c in g.classes)
        lines.append(f"Group {g.id} ({len(g.nodes)} node{'s' * (len(g.nodes) != 1)}): {g.label}")
        lines.append(f"  classes from {g.class_source}; medians: {meds or 'none'}")
    lines.append("")
    if fleet.outliers:
        lines.append("Outliers:")
        lines.extend("  " + o.describe() for o in fleet.outliers)
    else:
        lines.append("Outliers: none")
    lines += _baseline_lines(fleet)
    lines += _problem_lines(fleet)
    for w in fleet.warnings:
        lines.append(f"warning: {w}")
    for n in fleet.notes:
        lines.append(f"note: {n}")
    if fleet.groups:
        lines.append("")
        if all(len(g.nodes) <= max_rows for g in fleet.groups):
            lines.append("Class medians per node (ns; * outlier):")
            lines.append(table(fleet))
        else:
            lines.append(f"(per-node table: more than {max_rows} nodes in a group; see .table())")
    return "\n".join(lines).rstrip()


def _baseline_lines(fleet):
    """The describe() lines of the baseline: the reference, the counts, each node not ok in its line."""
    b = fleet.baseline
    if b is None:
        return []
    verdicts = b.get("nodes", {})
    counts = [f"{len(fleet._baseline_nodes(s))} {s}"
              for s in (BASELINE_OK, BASELINE_OFF, BASELINE_NOT_JUDGED)]
    where = f" ({b['file']})" if b.get("file") else ""
    lines = [f"Baseline {b.get('reference')}{where}: every node judged against it, alone or in a group: "
             + ", ".join(counts)]
    lines += [f"  {v.get('line')}" for v in verdicts.values() if v.get("status") != BASELINE_OK]
    return lines


def _problem_lines(fleet):
    """The describe() lines of settings that differ without an outlier, errors and missing nodes."""
    lines = []
    others = [r for r in fleet.nodes if r["differs"] and r["node"] not in {o.node for o in fleet.outliers}]
    if others:
        lines.append("Settings that differ from the node's group (no latency outlier):")
        for r in others:
            lines.append("  " + r["node"] + ": " + ", ".join(
                f"{k} {v!r} (group: {g!r})" for k, (v, g) in r["differs"].items()))
    if fleet.errors:
        lines.append("Errors:")
        lines.extend(f"  {e['node']}: {e['error']}" for e in fleet.errors)
    if fleet.missing:
        reasons = fleet.metadata.get("missing_reasons", {})
        lines.append("Missing:")
        lines.extend(f"  {n}: {reasons.get(n, 'expected, but no result and no error')}"
                     for n in fleet.missing)
    return lines


def _count(n, word):
    return f"no {word}s" if n == 0 else f"{n} {word}{'s' * (n != 1)}"


def ns(v):
    """A value in ns as the report writes it (``"107 ns"``)."""
    return _text.number(v, " ns")
