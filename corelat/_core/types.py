"""Type aliases of the public signatures, and the tuples of the words they allow (one source each)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Callable, Literal, Protocol, Union, get_args

#: A CPU selection: None (every CPU this process may use), a list of ids or a string like "0,2,4-7".
CPUs = Union[None, str, Sequence[int]]
#: Kernels of :func:`corelat.measure` (``corelat.KERNELS`` describes them).
Kernel = Literal["cas", "rw", "oneway"]
#: The ping-pong kernels (:func:`corelat.smt` measures sibling latency with them).
PingPongKernel = Literal["cas", "rw"]
#: Per-pair statistics of a :class:`~corelat.LatencyResult`.
Statistic = Literal["median", "mean", "min", "max", "std"]
#: ... every one of them, everywhere a statistic is asked for (results, compare, structure, plots,
#: the command line).
STATISTICS: tuple[str, ...] = get_args(Statistic)
#: Orders of a latency matrix: CPU ids ascending; package → NUMA node → L3 → core → thread; the
#: latency structure corelat infers (:func:`corelat.structure`).
Order = Literal["os", "topology", "structure"]
#: ... every one of them, everywhere an order is asked for by name (the plots, the command line) ...
ORDERS: tuple[str, ...] = get_args(Order)
#: ... of which a result and a measurement know the two that need no analysis (for the structure's
#: order, hand the result its structure: ``r.ordered(corelat.structure(r))``) ...
ResultOrder = Literal["os", "topology"]
RESULT_ORDERS: tuple[str, ...] = get_args(ResultOrder)
#: ... and the one default, ``None``: nothing is reordered unless asked (measure keeps the CPUs as
#: given, a plot or a command shows a result as it holds them).
DEFAULT_ORDER: Order | None = None


class Ordering(Protocol):
    """An order of CPUs with the indices where its groups start, level by level: what
    :meth:`LatencyResult.ordered` takes besides a word or a CPU list (a :class:`~corelat.Structure`
    is one)."""

    def order(self) -> list[int]: ...

    @property
    def boundaries(self) -> Mapping[str, Sequence[int]]: ...


#: A progress bar on stderr (True), none (False), or a callable ``fn(done, total)``.
Progress = Union[bool, Callable[[int, int], object]]
#: A file or folder path.
Path = Union[str, "os.PathLike[str]"]
#: Nodes expected in a fleet: a list of names, a file of names, or a Slurm-style host list.
Nodes = Union[str, "os.PathLike[str]", Sequence[str]]
