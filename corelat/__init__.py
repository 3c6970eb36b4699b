"""corelat: how fast the cores of this machine talk to each other.

``corelat.measure()`` returns the core-to-core latency matrix as NumPy arrays in a frozen
:class:`LatencyResult`; ``corelat.load()`` reads saved results and other tools' files.
"""

from ._version import __version__
from .check import CheckItem, check
from .compare import Comparison, compare, example_files
from .errors import CorelatError, InputError, MeasurementError, MeasurementTimeout
from .io import from_matrix, load
from .locks import LockResult, list_tests, locks
from .measure import ALL_KERNELS, KERNELS, allowed_cpus, clock_skew, measure, timer_info
from .result import LatencyResult, PairFlag
from .smt import SMTResult, smt
from .structure import Structure, structure
from .topology import Topology, TopologyWarning, topology

__all__ = [
    "ALL_KERNELS",
    "KERNELS",
    "CheckItem",
    "Comparison",
    "CorelatError",
    "InputError",
    "LatencyResult",
    "LockResult",
    "MeasurementError",
    "MeasurementTimeout",
    "PairFlag",
    "SMTResult",
    "Structure",
    "Topology",
    "TopologyWarning",
    "__version__",
    "allowed_cpus",
    "check",
    "clock_skew",
    "compare",
    "example_files",
    "from_matrix",
    "list_tests",
    "load",
    "locks",
    "measure",
    "smt",
    "structure",
    "timer_info",
    "topology",
]


def __getattr__(name):
    # matplotlib is optional and heavy: load corelat.plot only when it is used.
    if name == "plot":
        import importlib

        return importlib.import_module(".plot", __name__)
    raise AttributeError(f"module 'corelat' has no attribute {name!r}")
