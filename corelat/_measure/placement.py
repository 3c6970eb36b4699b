"""``corelat.placement()``: the latency matrix once per home of the line, as one result.

On a machine with several NUMA nodes a transfer between two CPUs costs more when the line's memory
lives on a third node, or on the far one of the two, than when it lives next to the CPU that asks
for it. :func:`placement` measures the matrix with every node as the home (``measure(home="node:K")``)
and says what the homes change, per kind of pair ("across packages: 114 ns homed with the
initiator, 176 ns homed with the responder, 190 ns homed on a third node").
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

from corelat._core.errors import InputError
from corelat._core.types import CPUs
from corelat._measure import sweep as _sweep
from corelat._measure.options import SweepOptions, sweep_keywords
from corelat._results.placement import PlacementResult
from corelat._system.home import allowed_mems, check_home, memory_nodes
from corelat._system.validate import as_list


def _home_list(homes, cpus, kernel):
    if isinstance(homes, str) and homes == "nodes":
        mems = allowed_mems()
        nodes = [k for k in memory_nodes() if mems is None or k in mems]
        return [check_home(f"node:{k}", cpus, kernel) for k in nodes]
    homes = as_list(homes, "homes must be 'nodes' or a list of homes like ['node:0', 'responder'], "
                           f"not {homes!r}")
    if not homes:
        raise InputError("homes is empty: give 'nodes' or at least one home")
    out = [check_home(h, cpus, kernel) for h in homes]
    labels = [h.label for h in out]
    if len(set(labels)) != len(labels):
        raise InputError(f"homes lists a home twice: {labels}")
    return out


@sweep_keywords(omit=("home",),
                refused={"home": "placement() measures every home in `homes`; do not pass home="})
def placement(cpus: CPUs = None, homes: str | Sequence[int | str] = "nodes",
              **options: Any) -> PlacementResult:
    """Measure the latency matrix once per home of the line.

    Every keyword of :func:`corelat.measure` but ``home`` (what ``homes`` varies) applies to every
    home.

    Parameters
    ----------
    cpus : CPUs
        As for :func:`corelat.measure`.
    homes : str or list of str
        ``"nodes"`` (every NUMA node this process may allocate on, as ``"node:K"``) or a list of
        homes as :func:`corelat.measure` takes them (``"initiator"``, ``"responder"``,
        ``"node:K"``, ``"cpu:K"``).

    Returns
    -------
    PlacementResult

    Raises
    ------
    InputError
        For bad arguments, before anything is measured (every home is checked first).
    CorelatError
        Whatever :func:`corelat.measure` raises.

    Examples
    --------
    >>> import corelat
    >>> r = corelat.placement([0, 1], homes=["initiator", "responder"], samples=5, round_trips=20)
    >>> r.homes
    ('initiator', 'responder')

    On a machine with several NUMA nodes, every node as the home:

    >>> print(corelat.placement(kernel="read-modified").describe())  # doctest: +SKIP
    across packages: 114 ns homed with the owner, 176 ns homed with the reader
    """
    return run(SweepOptions.build(cpus, **options), homes)


def run(options, homes="nodes"):
    """Measure as ``options`` (a :class:`~corelat._measure.options.SweepOptions`; its ``home`` is
    replaced) say once per home of ``homes``, every home checked first; a ``budget`` is the whole
    run's, each home's sweep given an equal share of what is left when it starts."""
    started = time.perf_counter()
    if not options.resolved:
        options = options.resolve()
    chosen = _home_list(homes, options.cpus, options.kernel)
    results = []
    for k, h in enumerate(chosen):
        budget = options.budget
        if budget is not None:
            budget = max(budget - (time.perf_counter() - started), 1e-6) / (len(chosen) - k)
        results.append(_sweep.run(dataclasses.replace(options, home=h, budget=budget)))
    return PlacementResult(homes=[h.label for h in chosen], results=results)
