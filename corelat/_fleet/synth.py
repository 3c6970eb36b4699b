"""Synthetic fleets for tests, benchmarks and the fleet notebook: copies of one real result with noise.

Each copy's pairs are jittered within the result's own spread: per pair class (from the OS topology
if the result has one, else from its latency structure) the robust spread of log latency over the
class's pairs; each node also gets an overall factor (clock and uncore differences between nodes).
One node can be slowed in one class.
"""

import numpy as np

from corelat._analysis import classes
from corelat._core import stats as _stats
from corelat._results.latency import LatencyResult

#: Robust SD of the whole-node factor (log scale): nodes differ by a couple of percent overall.
NODE_SIGMA = 0.02


def _classification(result):
    cpus = tuple(result.cpus)
    topo = result.topology
    got = classes.from_topology(topo.records(), cpus) if topo is not None else None
    return got if got is not None else classes.from_structure(result.median, cpus)


def class_spread(result):
    """{class: robust SD of log latency over the class's pairs} of a result."""
    codes, names = _classification(result)
    logm = np.log(result.median)
    out = {}
    for k, name in enumerate(names):
        v = logm[codes == k]
        if v.size:
            out[name] = _stats.median_sd(v)[1]
    return out


def copies(result, count, seed=0, *, slow=None, node_sigma=NODE_SIGMA, names="node{:03d}", metadata=None):
    """``count`` value-only results like ``result``, jittered; ``slow=(index, class, factor)`` slows
    one node's pairs of one class. ``metadata`` (a dict, or a callable of the index) is added."""
    rng = np.random.default_rng(seed)
    codes, cls_names = _classification(result)
    spread = class_spread(result)
    sigma = np.zeros(codes.shape)
    for k, name in enumerate(cls_names):
        sigma[codes == k] = spread.get(name, 0.0)
    base = np.array(result.median, dtype=np.float64)
    n = base.shape[0]
    low = np.tril(np.ones((n, n), dtype=bool), -1)
    out = []
    for i in range(count):
        z = rng.standard_normal((n, n))
        z = np.where(low, z, z.T)  # one value per pair
        m = base * np.exp(sigma * z + node_sigma * rng.standard_normal())
        if slow is not None and slow[0] == i:
            m = np.where(codes == cls_names.index(slow[1]), m * slow[2], m)
        name = names.format(i)
        md = {"cpu_model": result.metadata.get("cpu_model") or result.name, "hostname": name,
              "topology": result.metadata.get("topology"),
              "topology_summary": result.metadata.get("topology_summary")}
        extra = metadata(i) if callable(metadata) else metadata
        md.update(extra or {})
        out.append(LatencyResult.from_matrix(m, result.cpus, kernel=result.kernel, name=name, metadata=md))
    return out
