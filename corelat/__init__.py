"""corelat: how fast the cores of this machine talk to each other.

``corelat.measure()`` returns the core-to-core latency matrix as NumPy arrays in a frozen
:class:`LatencyResult`; ``corelat.load()`` reads saved results and other tools' files.
"""

from . import _early  # first: the command's quiet Ctrl-C while NumPy loads  # noqa: F401
from ._analysis.compare import Comparison, compare, example_files
from ._analysis.structure import Structure, structure
from ._core.errors import (
    CorelatError,
    InputError,
    InputFileNotFoundError,
    InputTypeError,
    MeasurementError,
    MeasurementTimeout,
    MissingDependencyError,
    SaveError,
)
from ._fleet.nodes import fleet
from ._fleet.run import measure_fleet
from ._measure.check import check
from ._measure.locks import list_tests, locks
from ._measure.measurers import clock_skew
from ._measure.placement import placement
from ._measure.smt import smt
from ._measure.sweep import measure
from ._results.check import CheckReport
from ._results.fleet import FleetResult
from ._results.latency import LatencyResult, PairFlag
from ._results.load import load
from ._results.locks import LockResult
from ._results.placement import PlacementResult
from ._results.smt import SMTResult
from ._system.conditions import CheckItem
from ._system.home import HOMES
from ._system.timer import timer_info
from ._system.topology import Topology, TopologyWarning, topology
from ._system.validate import ALL_KERNELS, KERNELS, allowed_cpus
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
    "report",
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
    if name == "report":  # the report's module loads corelat.plot (and matplotlib when it writes)
        import importlib

        return importlib.import_module("._report", __name__).report
    raise AttributeError(f"module 'corelat' has no attribute {name!r}")
