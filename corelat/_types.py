"""Type aliases of the public signatures (annotations only; nothing here runs)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Callable, Literal, Union

#: A CPU selection: None (every CPU this process may use), a list of ids or a string like "0,2,4-7".
CPUs = Union[None, str, Sequence[int]]
#: Kernels of :func:`corelat.measure` (``corelat.KERNELS`` describes them).
Kernel = Literal["cas", "rw", "oneway"]
#: The ping-pong kernels (:func:`corelat.smt` measures sibling latency with them).
PingPongKernel = Literal["cas", "rw"]
#: Per-pair statistics of a :class:`~corelat.LatencyResult`.
Statistic = Literal["median", "mean", "min", "max", "std"]
#: Matrix orders.
Order = Literal["os", "topology"]
#: A progress bar on stderr (True), none (False), or a callable ``fn(done, total)``.
Progress = Union[bool, Callable[[int, int], object]]
#: A file or folder path.
Path = Union[str, "os.PathLike[str]"]
