"""``corelat.placement()``: the latency matrix once per home of the line, as one result.

On a machine with several NUMA nodes a transfer between two CPUs costs more when the line's memory
lives on a third node, or on the far one of the two, than when it lives next to the CPU that asks
for it. :func:`placement` measures the matrix with every node as the home (``measure(home="node:K")``)
and says what the homes change, per kind of pair ("across packages: 114 ns homed with the
initiator, 176 ns homed with the responder, 190 ns homed on a third node").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Literal

from corelat._core.errors import InputError
from corelat._core.types import CPUs, Kernel, Progress, ResultOrder
from corelat._measure import sweep as _sweep
from corelat._measure.options import SweepOptions, refuse_unknown_keywords
from corelat._results.placement import PlacementResult
from corelat._system.home import allowed_mems, check_home, memory_nodes
from corelat._system.validate import (
    DEFAULT_MAX_SAMPLES,
    DEFAULT_MAX_TIME_PER_PAIR,
    DEFAULT_PRECISION,
    DEFAULT_TIMEOUT,
    as_list,
)


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


@refuse_unknown_keywords({"home": "placement() measures every home in `homes`; do not pass home="})
def placement(
    cpus: CPUs = None,
    homes: str | Sequence[int | str] = "nodes",
    *,
    kernel: Kernel = "cas",
    round_trips: int = 1000,
    samples: int | None = None,
    precision: float = DEFAULT_PRECISION,
    max_samples: int = DEFAULT_MAX_SAMPLES,
    max_time_per_pair: float = DEFAULT_MAX_TIME_PER_PAIR,
    warmup: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    progress: Progress = False,
    order: ResultOrder | None = None,
    name: str | None = None,
    strategy: Literal["full", "sample"] = "full",
    partition: Sequence[Sequence[int]] | None = None,
    topology: Any = None,
    retest: bool | int = True,
) -> PlacementResult:
    """Measure the latency matrix once per home of the line.

    Parameters
    ----------
    cpus : CPU selection, optional
        As for :func:`corelat.measure`.
    homes : str or list of str
        ``"nodes"`` (every NUMA node this process may allocate on, as ``"node:K"``) or a list of
        homes as :func:`corelat.measure` takes them (``"initiator"``, ``"responder"``,
        ``"node:K"``, ``"cpu:K"``).
    kernel, round_trips, samples, precision, max_samples, max_time_per_pair, warmup, timeout
        As for :func:`corelat.measure`, for every home.
    progress, order, name, strategy, partition, topology, retest
        As for :func:`corelat.measure`, for every home (``home`` is what ``homes`` varies).

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
    options = SweepOptions.build(
        cpus, kernel=kernel, round_trips=round_trips, samples=samples, precision=precision,
        max_samples=max_samples, max_time_per_pair=max_time_per_pair, warmup=warmup, timeout=timeout,
        progress=progress, order=order, name=name, strategy=strategy, partition=partition, topology=topology,
        retest=retest)
    return run(options, homes)


def run(options, homes="nodes"):
    """Measure as ``options`` (a :class:`~corelat._measure.options.SweepOptions`; its ``home`` is
    replaced) say once per home of ``homes``, every home checked first."""
    if not options.resolved:
        options = options.resolve()
    chosen = _home_list(homes, options.cpus, options.kernel)
    results = [_sweep.run(dataclasses.replace(options, home=h)) for h in chosen]
    return PlacementResult(homes=[h.label for h in chosen], results=results)
