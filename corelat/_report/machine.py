"""The report of one machine's result: latency, placement, SMT, locks.

Everything comes from the result itself: the warnings and settings recorded when it was measured,
never a new check of the machine that writes the report.
"""

from __future__ import annotations

import math
import os
import shlex

import numpy as np

from corelat._analysis.structure import structure
from corelat._core import text as _text
from corelat._core.protocol import thaw
from corelat._report import figures
from corelat._report.model import Data, Report, Section, Table, Text
from corelat.plot._words import _statistic_words

#: Metadata shown in the "machine" table, in this order, with their labels.
_MACHINE_KEYS = (("cpu_model", "CPU model"), ("cpu_count", "CPUs on the machine"),
                 ("topology_summary", "topology"), ("kernel_release", "Linux kernel"), ("os", "OS"),
                 ("machine", "architecture"), ("microcode", "microcode"), ("governor", "governor"),
                 ("boost", "boost"), ("smt_active", "SMT active"), ("hypervisor", "hypervisor"),
                 ("hostname", "host"), ("date", "date"), ("corelat_version", "corelat"),
                 ("python", "Python"), ("numpy", "NumPy"), ("source", "imported from"))


def _word(v):
    if v is None or v == "":
        return "not recorded"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def machine_blocks(md):
    """The machine's metadata as recorded with the result (what was not recorded, in one line)."""
    rows = [[label, _word(md.get(key))] for key, label in _MACHINE_KEYS]
    kept = [r for r in rows if r[1] != "not recorded"]
    # corelat's own results have no source: "imported from" is missing only in another tool's file
    missing = [r[0] for (key, _), r in zip(_MACHINE_KEYS, rows)
               if r[1] == "not recorded" and (key != "source" or md.get("value_only"))]
    out = [Table(["", "recorded"], kept)] if kept else []
    if missing:
        out.append(Text("Not recorded with this result: " + ", ".join(missing) + "."))
    return out


def settings_blocks(result):
    """Warnings and notes recorded with the result, and the settings that distort measurements."""
    md = result.metadata
    blocks = []
    warnings = list(getattr(result, "warnings", ()) or ())
    notes = list(getattr(result, "notes", ()) or ())
    cause = md.get("warning_cause")
    if warnings:
        head = "This result may be unreliable" + (f" ({cause})" if cause else "") + ":"
        blocks.append(Text(head + "\n" + "\n".join(f"• {w}" for w in warnings), pre=True))
    else:
        blocks.append(Text("No warning was recorded with this result."))
    if notes:
        blocks.append(Text("\n".join(f"note: {n}" for n in notes), pre=True))
    keys = (("governor", "CPU frequency governor"), ("boost", "turbo/boost"), ("smt_active", "SMT active"),
            ("hypervisor", "hypervisor"), ("microcode", "microcode"))
    rows = [[label, _word(md.get(k))] for k, label in keys]
    blocks.append(Table(["setting (when measured)", "value"], rows))
    return blocks


def _timer_text(timer):
    if not timer:
        return "not recorded"
    step = 1.0 / timer["ticks_per_ns"] if timer.get("ticks_per_ns") else None
    out = str(timer.get("name", "?"))
    if step:
        out += f", one tick = {step:.3g} ns"
    if timer.get("overhead_ticks") is not None:
        out += f", read overhead {timer['overhead_ticks']:g} ticks"
    return out


def method_table(result):
    """How the result was measured: kernel, sizes, precision, timer, home of the line."""
    md = result.metadata
    params = thaw(md.get("parameters") or {})
    home = thaw(md.get("home") or {})
    kernel = getattr(result, "kernel", None) or f"lock tests, {result.mode}, {result.duration:g} s per test"
    described = f": {md['kernel_description']}" if md.get("kernel_description") else ""
    value = md.get("latency") or (statistic_words(result, "median") if getattr(result, "value_only", False)
                                  else md.get("statistic"))
    rows = [["kernel", f"{kernel}{described}"], ["value", str(value or "not recorded")]]
    rows += [[k.replace("_", " "), _word(v)] for k, v in params.items()]
    if hasattr(result, "count") and not result.value_only:
        counts = np.asarray(result.count)[np.asarray(result.count) > 0]
        if counts.size:
            rows.append(["samples kept per pair", f"{int(counts.min())}-{int(counts.max())} "
                                                  f"(median {int(np.median(counts))})"])
    rows.append(["timer", _timer_text(md.get("timer"))])
    if home or not getattr(result, "value_only", False):
        rows.append(["home of the line", str(home.get("requested", "initiator (the default)"))
                     + (f": {home['method']}" if home.get("method") else "")])
    elapsed = float(md["elapsed_s"]) if md.get("elapsed_s") is not None else math.nan
    if math.isfinite(elapsed) and elapsed > 0:  # what the sweep recorded: the pairs, not the set-up
        rows.append(["time measuring the pairs", f"{elapsed:.2g} s" if elapsed < 10 else f"{elapsed:.0f} s"])
    command = command_text(md.get("argv"))
    if command:
        rows.append(["command", command])
    return Table(["", ""], rows)


def command_text(argv):
    """The recorded ``sys.argv`` as the command a person typed; "" where it says nothing (``-c``,
    an interactive session): the program's path is the ``corelat`` command, ``python -m corelat``
    or a script calling the API."""
    if not argv:
        return ""
    first, rest = str(argv[0]), [shlex.quote(str(a)) for a in argv[1:]]
    if first in ("", "-c", "-"):
        return ""
    base = os.path.basename(first)
    if base == "corelat":
        head = "corelat"
    elif base == "__main__.py" and os.path.basename(os.path.dirname(first)) == "corelat":
        head = "python -m corelat"
    else:
        head = "python " + shlex.quote(first)
    return " ".join([head, *rest])


def statistic_words(result, statistic):
    """What a value per pair is, in the words the figures use: ``median per pair``, or for a file of
    another tool the statistic it records (``mean per pair, as the file records it``)."""
    return _statistic_words(result, statistic)


def value_column(result):
    """The CSV column of a file of another tool: its recorded statistic, else ``value``."""
    return str(result.metadata.get("statistic") or "value")


def _cell(v):
    return "" if not math.isfinite(v) else f"{v:.2f}"


def matrices_csv(result, name="result.csv", label=None, lazy=False):
    """Median, min and the median's 95% CI per pair (one row per pair; not the raw samples); for a
    file of another tool its one value per pair, named by the statistic it records. ``lazy``: the
    text is made as the page is written (:class:`Data` ``chunks``), a matrix's row at a time."""
    if result.value_only:
        return _values_csv(result, name, label, lazy)
    med, mn = np.asarray(result.median), np.asarray(result.min)
    lo, hi = (np.asarray(a) for a in result.ci)
    symmetric = result.metadata.get("symmetric", True)
    cpus = result.cpus
    lines = [("home," if label else "") + "cpu_a,cpu_b,median_ns,min_ns,ci_low_ns,ci_high_ns"]
    prefix = f"{label}," if label else ""
    for i in range(result.n):
        for j in range(i if symmetric else result.n):
            if i != j:
                lines.append(f"{prefix}{cpus[i]},{cpus[j]},{_cell(med[i, j])},{_cell(mn[i, j])},"
                             f"{_cell(lo[i, j])},{_cell(hi[i, j])}")
    return Data(name, "\n".join(lines) + "\n", "median, min and 95% CI of the median per CPU pair (CSV)")


def _values_csv(result, name, label, lazy=False):
    value, column = np.asarray(result.median), value_column(result)
    symmetric = result.metadata.get("symmetric", True)
    prefix = f"{label}," if label else ""
    cpus, n = [str(c) for c in result.cpus], result.n

    def chunks():
        yield ("home," if label else "") + f"cpu_a,cpu_b,{column}_ns\n"
        for i in range(n):
            head = f"{prefix}{cpus[i]},"
            yield "".join(f"{head}{cpus[j]},{'' if v != v or v in (_INF, -_INF) else f'{v:.2f}'}\n"
                          for j, v in enumerate(value[i, : i if symmetric else n].tolist()) if j != i)

    what = f"{statistic_words(result, 'median')} (one value per pair: no min, no CI), per CPU pair (CSV)"
    rows = n * (n - 1) // (2 if symmetric else 1)
    if lazy:
        return Data(name, "", what, chunks=chunks, rows=rows)
    return Data(name, "".join(chunks()), what)


_INF = math.inf


def _model(result):
    return result.metadata.get("cpu_model") or result.name or "result"


def _stem(result):
    keep = "".join(c if c.isalnum() or c in "-_." else "-" for c in (result.name or "result"))
    return keep.strip("-") or "result"


def latency(result, statistic="median"):
    """A latency result's report."""
    st = structure(result, statistic=statistic)
    reading = st.summary()["reading"]
    rep = Report(f"{_model(result)}: core-to-core latency", reading, "latency")
    head = [f"{result.n} CPUs, kernel {result.kernel}; {statistic_words(result, statistic)}"
            + (" (one value per pair, imported: no samples)" if result.value_only else "")]
    summary = [Text("\n".join(head)), Text(_text.latency_summary(result, statistic), pre=True)]
    rep.sections.append(Section("summary", "Summary", summary))
    rep.sections.append(Section("heatmap", "Heatmap", [figures.heatmap(result, statistic)]))
    dist = figures.distribution(result)
    rep.sections.append(Section("distribution", "Distribution", [dist] if dist else [
        Text("One value per pair (imported from another tool): no samples, so no distribution.")]))
    blocks = [Text(st.describe(), pre=True)]
    blocks += [Text(f"warning: {w}") for w in st.warnings] + [Text(f"note: {n}") for n in st.notes]
    rep.sections.append(Section("structure", "Structure", blocks))
    rep.sections += common_sections(result)
    rep.sections.append(Section("data", "Data", [matrices_csv(result, _stem(result) + ".csv", lazy=True)]))
    return rep


def common_sections(result):
    """Topology, warnings and settings, method, machine: the sections every machine report has."""
    md = result.metadata
    topo_blocks = [Text(str(md.get("topology_summary") or "No topology was recorded with this result."))]
    topo = getattr(result, "topology", None)
    if topo is not None:
        lines = topo.describe().splitlines()
        more = f"\n… {len(lines) - 60} more lines" if len(lines) > 60 else ""
        topo_blocks.append(Text("\n".join(lines[:60]) + more, pre=True))
    return [Section("topology", "Topology", topo_blocks),
            Section("warnings", "Warnings and settings", settings_blocks(result)),
            Section("method", "How it was measured", [method_table(result)]),
            Section("machine", "Machine", machine_blocks(md))]


def placement(result, statistic="median"):
    """A placement result's report: one matrix per home of the line."""
    first = result.results[0]
    rep = Report(f"{_model(first)}: where the line lives", result.describe().splitlines()[0], "placement")
    rep.sections.append(Section("summary", "Summary", [Text(result.describe(), pre=True)]))
    rep.sections.append(Section("heatmap", "Heatmaps", [figures.placement(result, statistic)]))
    lines = [f"home {label}: {structure(r, statistic=statistic).summary()['reading']}"
             for label, r in zip(result.homes, result.results)]
    rep.sections.append(Section("structure", "Structure", [Text("\n".join(lines), pre=True)]))
    common = common_sections(first)
    for block in next(s for s in common if s.id == "method").blocks:  # every home, not the first's
        block.rows = [[k, ", ".join(result.homes) if k == "home of the line" else v] for k, v in block.rows]
    rep.sections += common
    parts = [matrices_csv(r, label=label).text.split("\n", 1)
             for label, r in zip(result.homes, result.results)]
    text = parts[0][0] + "\n" + "".join(p[1] for p in parts)
    rep.sections.append(Section("data", "Data", [Data(_stem(first) + "-placement.csv", text,
                                                      "median, min and 95% CI per home and CPU pair (CSV)")]))
    return rep


def smt(result, statistic="median"):
    """An SMT result's report."""
    s = result.summary(statistic=statistic)
    sib = s.get("sibling_ns")
    headline = (f"{s['pairs']} sibling pairs: siblings {sib:.1f} ns" if sib is not None
                else str(s.get("reason") or "no SMT sibling pairs measured"))
    rep = Report(f"{_model(result)}: SMT siblings", headline, "smt")
    rep.sections.append(Section("summary", "Summary", [Text(result.table(statistic=statistic), pre=True)]))
    rep.sections += common_sections(result)
    return rep


def locks(result):
    """A lock result's report."""
    s = result.summary()
    fastest = min(s["avg_ns"].items(), key=lambda kv: kv[1] if math.isfinite(kv[1]) else math.inf,
                  default=None)
    headline = f"{len(s['avg_ns'])} tests, {s['mode']}" + (
        f"; fastest {fastest[0]} {fastest[1]:.1f} ns" if fastest and math.isfinite(fastest[1]) else "")
    rep = Report(f"{_model(result)}: locks and atomics", headline, "locks")
    blocks = [Text(result.table(), pre=True)]
    fig = figures.locks(result)
    if fig is not None:
        blocks.append(fig)
    if result.violations:
        blocks.append(Text("Violations: " + ", ".join(result.violations)))
    rep.sections.append(Section("summary", "Summary", blocks))
    rep.sections += common_sections(result)
    return rep
