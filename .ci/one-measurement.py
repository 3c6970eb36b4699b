"""One real measurement, what every Python of the matrix proves beside the pure tier: the package
imports, its extension measures on two real CPUs, the result saves and loads back equal.

    python .ci/one-measurement.py       (from outside the checkout, against the installed package)
"""

import os
import pathlib
import sys
import tempfile

import numpy as np

import corelat

here = pathlib.Path(corelat.__file__).resolve()
assert pathlib.Path(__file__).resolve().parents[1] / "corelat" not in here.parents, f"the checkout, not installed: {here}"
cpus = sorted(os.sched_getaffinity(0))[:2]
r = corelat.measure(cpus, round_trips=20, samples=5, timeout=30)
assert r.median.shape == (2, 2) and np.isfinite(r.median[0, 1]) and r.median[0, 1] > 0, r.median
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "one.npz")
    r.save(path)
    back = corelat.load(path)
    np.testing.assert_array_equal(back.samples, r.samples)
print(f"one measurement on Python {sys.version.split()[0]}, numpy {np.__version__}: CPUs {cpus}, "
      f"{corelat.timer_info()['name']} timer, saved and loaded")
