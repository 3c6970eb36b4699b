"""Turning a sweep's pair runs into a :class:`~corelat.LatencyResult`'s arrays and metadata.

:func:`assemble` lays each pair's rows into the ``(n, n, k)`` matrix (mirrored for symmetric
kernels, both directions for the others), :func:`estimate` copies the sample strategy's estimates,
and :func:`metadata` records how the sweep was measured, with its warnings and notes: among them
where each pair's page was found (:func:`home_record`) and the sizes too small to mean much
(:func:`size_warnings`).
"""
from __future__ import annotations

import os

import numpy as np

from corelat._core import stats as _stats
from corelat._measure import quality as _quality
from corelat._results.latency import PairFlag
from corelat._system import home as _home
from corelat._system.home import SPREAD_NODE, UNKNOWN_NODE
from corelat._system.topology import topology
from corelat._system.validate import ALL_KERNELS, CHASE_KERNELS, MIN_ROUND_TRIPS, MIN_SAMPLES


def row_flags(run):
    """Shape and migration flags of each row of a run (list of PairFlag), computed once per run."""
    if run.flags is not None:
        return list(run.flags)
    out = []
    for row in run.values:
        f = _quality.pair_flags(row)
        if np.isnan(row).any():
            f |= PairFlag.MIGRATED
        out.append(f)
    return out


def metadata(config, sweep, flags, data, extras, symmetric, estimates, classes, timer, machine, placed):
    """What the result records about how it was measured, and the warnings and notes; ``placed``:
    where the pages were found, per cell (``extras["home_node"]`` is set from it)."""
    plan, runs, first = config.plan, sweep.runs, sweep.first
    latency = _latency_meaning(config.kernel, symmetric)
    notes, info = _quality.sweep_warnings(
        flags, config.cpus, symmetric=symmetric, samples=data, precision=plan.precision,
        max_time_per_pair=_time_per_pair(config), retested=sweep.retested,
        estimated=len(estimates))
    if "skew_bound_ns" in extras:
        note = _quality.directions(_stats.median(data), extras["skew_bound_ns"], config.cpus)
        if note:
            info.append(note)
    # the pages' record and the sizes' warnings are made here from plain values, so the options go
    # down once after the sweep: the machine's floor is only read (the CPUs' nodes), not asked to judge
    if placed:
        extras["home_node"], home_notes = home_record(config.home, config.cpus, placed, symmetric)
        notes.extend(home_notes)
    notes.extend(size_warnings(config.round_trips, plan, timer))
    skipped = sweep.skipped
    if skipped:
        notes.append(f"{skipped} more unstable CPU pair{'s were' if skipped != 1 else ' was'} not "
                     f"re-measured (retest limit {sweep.limit}; pass retest=N to re-measure more)")
    meta = {
        "kernel": config.kernel,
        "kernel_description": ALL_KERNELS[config.kernel],
        "timer": timer,
        "parameters": dict(config.parameters),
        "sampling": {
            "mode": plan.mode,
            "strategy": config.strategy,
            "precision": plan.precision,
            "max_time_per_pair": plan.max_time_per_pair,
            "max_samples": plan.samples if plan.mode == "precision" else None,
            "first_chunk": plan.first_chunk if plan.mode == "precision" else None,
            "pairs_measured": len(runs),
            "pairs_estimated": len(estimates),
            "pairs_retested": sweep.retested,
            "pairs_target_not_met": sum(1 for r in runs.values() if r.met is False),
            "classes": len(classes) if classes is not None else None,
            "samples_taken": int(sum(r.values.shape[1] for r in runs.values())
                                 + sum(r.values.shape[1] for r in first.values())),
            "chunks": int(sum(r.chunks for r in runs.values()) + sum(r.chunks for r in first.values())),
        },
        "unit": "ns",
        "latency": latency,
        "home": {"requested": config.home.label, "method": config.home.method},
        "cpu_selection": {**(config.selection or {}), "cpus": list(config.cpus)},
        "symmetric": symmetric,
        "elapsed_s": sweep.elapsed,
        "kernel_s": sweep.kernel_seconds,
        "warnings": notes,
        "notes": info,
        "warning_cause": _quality.shared_cause(flags, machine.get("hypervisor")),
    }
    if config.kernel in CHASE_KERNELS:
        meta["direction"] = "samples[i, j]: lines held by cpus[i], loaded by cpus[j]"
    elif not symmetric:
        meta["direction"] = "samples[i, j]: messages sent by cpus[i], received by cpus[j]"
    return meta


def _time_per_pair(config):
    """The most a pair could take: its cap, or the whole budget where that is less (the budget caps
    each pair by the time left)."""
    cap = config.plan.max_time_per_pair
    return cap if config.budget is None or cap is None else min(cap, config.budget)


def _latency_meaning(kernel, symmetric):
    if kernel in CHASE_KERNELS:
        return "one load = one pass over the pointer chain / its length (a one-way transfer)"
    if symmetric:
        return "one-way = round-trip time / 2"
    return "one-way = receiver's timer at arrival - sender's timer at sending - one timer read"


def cells(i, j, symmetric):
    """Matrix cells of a pair's rows: (i, j) for symmetric kernels; (j→i, i→j) for one-way runs,
    whose row 0 is cpus[j] → cpus[i]."""
    return [(i, j)] if symmetric else [(j, i), (i, j)]


def assemble(n, runs, first, plan, symmetric):
    k = plan.samples if plan.mode == "fixed" else max([r.values.shape[1] for r in runs.values()] + [1])
    data = np.full((n, n, k), np.nan)
    flags = np.zeros((n, n), dtype=np.uint32)
    taken = np.zeros((n, n), dtype=np.int32)
    dropped = np.zeros((n, n), dtype=np.int32)

    def fill(store, fl, p, run, extra_bits=0):
        i, j = p
        for (r, c), row, f in zip(cells(i, j, symmetric), run.values, row_flags(run)):
            f = PairFlag.MEASURED | f | extra_bits
            if run.met is False:
                f |= PairFlag.TARGET_NOT_MET
            store[r, c, : row.size] = row
            fl[r, c] = f
            if store is data:
                taken[r, c] = row.size
                dropped[r, c] = int(np.isnan(row).sum())
            if symmetric:
                store[c, r] = store[r, c]
                fl[c, r] = (f & ~PairFlag.MEASURED) | PairFlag.MIRRORED
                if store is data:
                    taken[c, r], dropped[c, r] = taken[r, c], dropped[r, c]

    for p, run in runs.items():
        fill(data, flags, p, run, PairFlag.RETESTED if p in first else 0)
    extras = {"samples_taken": taken, "dropped": dropped}
    if first:
        k1 = max(r.values.shape[1] for r in first.values())
        first_data = np.full((n, n, k1), np.nan)
        first_flags = np.zeros((n, n), dtype=np.uint32)
        for p, run in first.items():
            fill(first_data, first_flags, p, run)
        extras["first_attempt"] = first_data
        extras["first_flags"] = first_flags
    return data, flags, extras


def estimate(data, flags, extras, estimates, symmetric, blocks, cpus):
    """Copy each unmeasured pair's cells from its class representative; flag them ESTIMATED.

    ``extras["estimated_from"][r, c]`` holds the CPU ids (not positions, which reordering the
    result changes) of the cell that was copied."""
    n = data.shape[0]
    source = np.full((n, n, 2), -1, dtype=np.int64)
    for (i, j), (p, q) in estimates.items():
        if symmetric or blocks[i] == blocks[p]:
            pairs = [((i, j), (p, q)), ((j, i), (q, p))]
        else:  # one-way: keep the direction between the same blocks
            pairs = [((i, j), (q, p)), ((j, i), (p, q))]
        for (r, c), (sr, sc) in pairs:
            data[r, c] = data[sr, sc]
            flags[r, c] = PairFlag.ESTIMATED
            source[r, c] = (cpus[sr], cpus[sc])
    extras["estimated_from"] = source


def expected_node(home, cpu_a, cpu_b, node_of):
    """The node the page should be on for a run timed by cpu_a against cpu_b (None: unknown)."""
    if home.kind == "node":
        return home.value
    cpu = {"initiator": cpu_a, "responder": cpu_b, "cpu": home.value}[home.kind]
    return node_of.get(cpu)


def home_record(home, cpus, reports, symmetric, node_of=None):
    """``(extras["home_node"], warnings)`` from ``{(r, c): (node, bind_errno, query_errno, timer_cpu,
    partner_cpu)}`` of the measured cells; symmetric kernels mirror each cell to ``(c, r)``."""
    n = len(cpus)
    node_of = _home.cpu_nodes() if node_of is None else node_of
    found = np.full((n, n), UNKNOWN_NODE, dtype=np.int64)
    expected = {}
    for (r, c), rep in reports.items():
        found[r, c] = rep[0]
        if symmetric:
            found[c, r] = rep[0]
        expected[r, c] = expected_node(home, rep[3], rep[4], node_of)
    return found, home_warnings(home, cpus, found, reports, expected)


def home_warnings(home, cpus, found, reports, expected):
    """Warnings about where the pages were found; ``found`` is ``extras["home_node"]``, ``reports``
    the ``{(r, c): (node, bind_errno, query_errno, ...)}`` of the measured cells and ``expected``
    ``{(r, c): node or None}``."""
    out = []
    bind_errs = {r[1] for r in reports.values() if r[1]}
    query_errs = {r[2] for r in reports.values() if r[2]}
    if bind_errs:
        out.append(f"home {home.label}: mbind failed ({_errnames(bind_errs)}); the pages were placed by "
                   "first "
                   "touch instead")
    if query_errs and home.kind != "initiator":
        out.append(f"home {home.label}: could not verify where the pages live: move_pages failed "
                   f"({_errnames(query_errs)}; containers often forbid it)")
    wrong = []
    for (r, c), want in expected.items():
        got = int(found[r, c])
        if got == SPREAD_NODE or (want is not None and got >= 0 and got != want):
            wrong.append((r, c, got, want))
    if wrong:
        r, c, got, want = wrong[0]
        where = "on several nodes" if got == SPREAD_NODE else f"on node {got}"
        out.append(f"home {home.label}: the page of {len(wrong)} of {len(expected)} measured cell(s) is not "
                   "where "
                   f"it was asked to be (e.g. CPUs {cpus[r]}/{cpus[c]}: {where}, not node {want}); a memory "
                   "policy (numactl), the cpuset's mems or a full node moved it; see extras['home_node']")
    return out


def _errnames(errs):
    return ", ".join(sorted(f"{os.strerror(e)} [errno {e}]" for e in errs))


def size_warnings(round_trips, plan, timer=None):
    """Sentences for ``result.warnings`` when the sizes asked for are too small to mean much."""
    out = []
    if round_trips < MIN_ROUND_TRIPS:
        step = (timer or {}).get("resolution_ns")
        here = f" ({step:.0f} ns here)" if isinstance(step, (int, float)) and step > 0 else ""
        out.append(f"each sample times only {round_trips} round trip{'s' if round_trips != 1 else ''}: the "
                   f"timer's step{here} and the cost of reading it weigh on every value; use at least "
                   f"{MIN_ROUND_TRIPS} round_trips per sample")
    if plan.mode == "fixed" and plan.samples < MIN_SAMPLES:
        out.append(f"{plan.samples} sample{'s' if plan.samples != 1 else ''} per pair: with fewer than "
                   f"{MIN_SAMPLES} there is no 95% confidence interval of the median (the ± shown is the "
                   f"spread of what was taken); use at least {MIN_SAMPLES} samples")
    return out


def topology_metadata():
    """The live machine's topology for the result (a missing or odd sysfs must not stop a sweep)."""

    try:
        topo = topology()
    except Exception as e:  # noqa: BLE001 - topology is a label on the result, not a requirement
        return {"topology": None, "topology_summary": f"unknown ({type(e).__name__}: {e})"}
    return {"topology": topo.to_dict(), "topology_summary": topo.headline()}
