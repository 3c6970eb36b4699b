"""corelat: how fast the cores of this machine talk to each other.

``corelat.measure()`` returns the core-to-core latency matrix as NumPy arrays in a frozen
:class:`LatencyResult`; ``corelat.load()`` reads saved results and other tools' files.
"""

from . import _early  # first: the command's quiet Ctrl-C while NumPy loads  # noqa: F401, I001

import importlib
from typing import TYPE_CHECKING

from ._core import forks as _forks  # noqa: F401  a fork waits for another thread's import of corelat
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
from ._version import __version__

# Everything else loads on first use (the package's __getattr__): `import corelat` costs NumPy's
# start-up and little more, and a command that only loads or plots never imports the measuring,
# fleet or analysis modules it does not use. Type checkers see the real imports.
if TYPE_CHECKING:
    from ._analysis.baseline import reference
    from ._analysis.compare import Comparison, compare, example_files
    from ._analysis.judge import verify
    from ._analysis.place import place
    from ._report import report
    from ._analysis.structure import Structure, structure
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
    from ._results.reference import Reference
    from ._results.smt import SMTResult
    from ._results.verdict import ClassVerdict, Verdict
    from ._system.conditions import CheckItem
    from ._system.home import HOMES
    from ._system.timer import timer_info
    from ._system.topology import Topology, TopologyWarning, topology
    from ._system.validate import ALL_KERNELS, KERNELS, allowed_cpus

_LAZY = {
    # the report's module loads corelat.plot (and matplotlib when it writes)
    "report": "._report",
    "reference": "._analysis.baseline",
    "verify": "._analysis.judge",
    "place": "._analysis.place",
    "Comparison": "._analysis.compare",
    "compare": "._analysis.compare",
    "example_files": "._analysis.compare",
    "Structure": "._analysis.structure",
    "structure": "._analysis.structure",
    "fleet": "._fleet.nodes",
    "measure_fleet": "._fleet.run",
    "check": "._measure.check",
    "list_tests": "._measure.locks",
    "locks": "._measure.locks",
    "clock_skew": "._measure.measurers",
    "placement": "._measure.placement",
    "smt": "._measure.smt",
    "measure": "._measure.sweep",
    "CheckReport": "._results.check",
    "FleetResult": "._results.fleet",
    "LatencyResult": "._results.latency",
    "PairFlag": "._results.latency",
    "load": "._results.load",
    "LockResult": "._results.locks",
    "PlacementResult": "._results.placement",
    "SMTResult": "._results.smt",
    "Reference": "._results.reference",
    "Verdict": "._results.verdict",
    "ClassVerdict": "._results.verdict",
    "CheckItem": "._system.conditions",
    "HOMES": "._system.home",
    "timer_info": "._system.timer",
    "Topology": "._system.topology",
    "TopologyWarning": "._system.topology",
    "topology": "._system.topology",
    "ALL_KERNELS": "._system.validate",
    "KERNELS": "._system.validate",
    "allowed_cpus": "._system.validate",
}

__all__ = [
    "ALL_KERNELS",
    "HOMES",
    "KERNELS",
    "CheckItem",
    "CheckReport",
    "ClassVerdict",
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
    "Reference",
    "SMTResult",
    "SaveError",
    "Structure",
    "Topology",
    "TopologyWarning",
    "Verdict",
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
    "place",
    "placement",
    "reference",
    "report",
    "smt",
    "structure",
    "timer_info",
    "topology",
    "verify",
]


def __getattr__(name):
    # The measuring, analysis and fleet modules on first use (see _LAZY); matplotlib is optional and
    # heavy: corelat.plot loads only when it is used.
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value  # found at once from now on
        return value
    if name == "plot":
        return importlib.import_module(".plot", __name__)
    raise AttributeError(f"module 'corelat' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__) | {"plot"})
