"""The report of several results: a comparison of machines, and a fleet of nodes."""

from __future__ import annotations

import math

from corelat._analysis.compare import compare, labels_for
from corelat._core.protocol import thaw
from corelat._report import figures
from corelat._report.machine import _MACHINE_KEYS, _word, matrices_csv, value_column
from corelat._report.model import Data, Report, Section, Table, Text
from corelat._results.fleet import label as class_label


def comparison(items, statistic="median"):
    """Several machines on one colour scale, the per-class table and the ratios."""
    results, names = labels_for(list(items))
    comp = compare(*results, names=names, statistic=statistic)
    readings = [s.summary()["reading"] for s in comp.structures]
    rep = Report(f"{len(results)} machines compared: core-to-core latency", comp.name, "comparison")
    rep.sections.append(Section("summary", "Summary", [
        Table(["machine", "structure"], [[n, r] for n, r in zip(names, readings)])]))
    rep.sections.append(Section("heatmap", "Heatmaps", [figures.comparison(results, names, statistic)]))
    rep.sections.append(Section("classes", "Per class and ratios", [Text(comp.table(), pre=True)]))
    warn = [f"{w}" for w in comp.warnings] + [f"note: {n}" for n in comp.notes]
    rep.sections.append(Section("warnings", "Warnings and settings", [
        Text("\n".join(warn) if warn else "No warning was recorded with these results.", pre=bool(warn))]))
    rows = [[label] + [_word(r.metadata.get(key)) for r in results] for key, label in _MACHINE_KEYS]
    rows = [row for row in rows if any(c != "not recorded" for c in row[1:])]
    rows.insert(0, ["kernel"] + [r.kernel for r in results])
    rows.insert(1, ["CPUs measured"] + [str(r.n) for r in results])
    rep.sections.append(Section("machine", "Machines", [Table([""] + list(names), rows)]))
    rep.sections.append(Section("data", "Data", [_comparison_csv(results, names)]))
    return rep


def _comparison_csv(results, names):
    """One CSV of every machine's pairs; with a file of another tool among them, a column says what
    each row's value is (its one value per pair has no min and no CI)."""
    if not any(r.value_only for r in results):
        parts = [matrices_csv(r, label=n).text.split("\n", 1) for n, r in zip(names, results)]
        text = parts[0][0].replace("home,", "machine,") + "\n" + "".join(p[1] for p in parts)
        return Data("comparison.csv", text, "median, min and 95% CI per machine and CPU pair (CSV)")
    lines = ["machine,cpu_a,cpu_b,statistic,value_ns,min_ns,ci_low_ns,ci_high_ns"]
    for name, r in zip(names, results):
        rows = matrices_csv(r, label="-").text.splitlines()[1:]
        what = value_column(r) if r.value_only else "median"
        for row in rows:
            cells = row.split(",")[1:]  # cpu_a, cpu_b, value[, min, ci_low, ci_high]
            cells += [""] * (6 - len(cells))
            lines.append(",".join([_csv_cell(name), cells[0], cells[1], what, *cells[2:]]))
    return Data("comparison.csv", "\n".join(lines) + "\n",
                "per machine and CPU pair: the value each file holds (the statistic column says which), "
                "min and 95% CI where samples were kept (CSV)")


def _csv_cell(text):
    text = str(text)
    return '"' + text.replace('"', '""') + '"' if any(c in text for c in ',"\n') else text


def _verdict(result):
    s = result.summary()
    lines = []
    if s["ok"]:
        lines.append(f"Every node is typical: {_n(s['nodes'], 'node')} in {_n(s['groups'], 'group')}, "
                     "no outlier, no error, none missing.")
    for o in result.outliers:
        lines.append(f"outlier: {o.describe()}")
    lines += [f"error: {e['node']}: {e['error']}" for e in result.errors]
    reasons = result.metadata.get("missing_reasons", {})
    lines += [f"missing: {n}: {reasons.get(n, 'expected, but no result and no error')}"
              for n in result.missing]
    return lines


def _differs_rows(result):
    """The settings in which each outlier node differs from its group."""
    off = {o.node for o in result.outliers}
    rows = []
    for rec in result.nodes:
        if rec["node"] in off:
            differs = thaw(rec["differs"]) or {}
            text = "; ".join(f"{k}: {v!r} (group: {g!r})" for k, (v, g) in differs.items())
            rows.append([rec["node"], text or "no recorded setting differs"])
    return rows


def _n(k, word):
    return f"{k} {word}{'s' if k != 1 else ''}"


def _ns(v):
    return "" if v is None or not math.isfinite(v) else f"{v:.1f}"


def node_table(result):
    """Every node (errors and missing ones too), with its class medians; filterable in the page."""
    classes = list(dict.fromkeys(c for g in result.groups for c in g.classes))
    rows = []
    for rec in result.records():
        differs = "; ".join(f"{k} {v!r}" for k, (v, _) in (rec["differs"] or {}).items())
        rows.append([rec["node"], rec["status"], "" if rec["group"] is None else str(rec["group"])]
                    + [_ns(rec["classes"].get(c)) for c in classes]
                    + [", ".join(map(class_label, rec["outlier_classes"])), differs, rec["error"] or ""])
    header = ["node", "status", "group"] + [class_label(c) for c in classes] + [
        "outlier in", "settings differ", "error"]
    return Table(header, rows, filterable=True)


def fleet(result):
    """A fleet's report: the verdict first, then its figures, the outliers' settings, every node."""
    s = result.summary()
    headline = (f"{_n(s['nodes'], 'node')} in {_n(s['groups'], 'group')}: {_n(s['outliers'], 'outlier')}, "
                f"{_n(s['errors'], 'error')}, {s['missing']} missing")
    rep = Report(f"Fleet {result.name}: core-to-core latency", headline, "fleet")
    rep.sections.append(Section("verdict", "Verdict", [Text("\n".join(_verdict(result)), pre=True)]))
    groups = [[str(g.id), str(len(g.nodes)), g.label,
               ", ".join(f"{class_label(c)} {_ns(g.class_medians[c])} ns" for c in g.classes)]
              for g in result.groups]
    rep.sections.append(Section("groups", "Groups", [Table(["group", "nodes", "hardware", "class medians"],
                                                           groups)]))
    if result.groups:
        rep.sections.append(Section("figures", "Figures", figures.fleet(result)))
    rows = _differs_rows(result)
    rep.sections.append(Section("settings", "Settings of the outliers", [
        Table(["node", "differs from its group in"], rows) if rows else Text("No outlier.")]))
    rep.sections.append(Section("nodes", "Every node", [node_table(result)]))
    md = thaw(result.metadata)
    rows = [[k.replace("_", " "), _word(v)] for k, v in md.items() if not isinstance(v, (dict, list))]
    rep.sections.append(Section("machine", "Settings of the report", [Table(["", ""], rows)]))
    csv = ["node,status,group,class,median_ns"] + [
        f"{r['node']},{r['status']},{'' if r['group'] is None else r['group']},{c},{_ns(v)}"
        for r in result.records() for c, v in r["classes"].items()]
    data = Data(f"{result.name or 'fleet'}-nodes.csv", "\n".join(csv) + "\n", "class medians per node (CSV)")
    rep.sections.append(Section("data", "Data", [data]))
    return rep
