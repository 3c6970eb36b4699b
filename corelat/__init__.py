"""corelat: how fast the cores of this machine talk to each other.

``corelat.measure()`` returns the core-to-core latency matrix as NumPy arrays in a frozen
:class:`LatencyResult`; ``corelat.load()`` reads saved results and other tools' files.
"""

from . import _early  # first: the command's quiet Ctrl-C while NumPy loads  # noqa: F401
from ._check import CheckItem, CheckReport, check
from ._compare import Comparison, compare, example_files
from ._errors import (
    CorelatError,
    InputError,
    InputFileNotFoundError,
    InputTypeError,
    MeasurementError,
    MeasurementTimeout,
    MissingDependencyError,
    SaveError,
)
from ._fleet import FleetResult, fleet
from ._fleet_run import measure_fleet
from ._home import HOMES
from ._io import load
from ._locks import LockResult, list_tests, locks
from ._measurers import clock_skew
from ._placement import PlacementResult, placement
from ._result import LatencyResult, PairFlag
from ._smt import SMTResult, smt
from ._structure import Structure, structure
from ._sweep import measure
from ._timer import timer_info
from ._topology import Topology, TopologyWarning, topology
from ._validate import ALL_KERNELS, KERNELS, allowed_cpus
from ._version import __version__

__all__ = [
    "ALL_KERNELS",
    "HOMES",
    "KERNELS",
    "CheckItem",
    "CheckReport",
    "Comparison",
    "CorelatError",
    "FleetResult",
    "InputError",
    "InputFileNotFoundError",
    "InputTypeError",
    "LatencyResult",
    "LockResult",
    "MeasurementError",
    "MeasurementTimeout",
    "MissingDependencyError",
    "PairFlag",
    "PlacementResult",
    "SMTResult",
    "SaveError",
    "Structure",
    "Topology",
    "TopologyWarning",
    "__version__",
    "allowed_cpus",
    "check",
    "clock_skew",
    "compare",
    "example_files",
    "fleet",
    "list_tests",
    "load",
    "locks",
    "measure",
    "measure_fleet",
    "placement",
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
