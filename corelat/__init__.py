"""corelat: how fast the cores of this machine talk to each other.

``corelat.measure()`` returns the core-to-core latency matrix as NumPy arrays in a frozen
:class:`LatencyResult`; ``corelat.load()`` reads saved results and other tools' files.
"""

from ._version import __version__
from .check import CheckItem, check
from .errors import CorelatError, InputError, MeasurementError, MeasurementTimeout
from .io import from_matrix, load
from .measure import ALL_KERNELS, KERNELS, allowed_cpus, clock_skew, measure, timer_info
from .result import LatencyResult, PairFlag
from .smt import SMTResult, smt
from .topology import Topology, TopologyWarning, topology

__all__ = [
    "__version__",
    "ALL_KERNELS",
    "CheckItem",
    "CorelatError",
    "InputError",
    "KERNELS",
    "LatencyResult",
    "MeasurementError",
    "MeasurementTimeout",
    "PairFlag",
    "SMTResult",
    "Topology",
    "TopologyWarning",
    "allowed_cpus",
    "check",
    "clock_skew",
    "from_matrix",
    "load",
    "measure",
    "smt",
    "timer_info",
    "topology",
]


def __getattr__(name):
    # matplotlib is optional and heavy: load corelat.plot only when it is used.
    if name == "plot":
        import importlib

        return importlib.import_module(".plot", __name__)
    raise AttributeError(f"module 'corelat' has no attribute {name!r}")
