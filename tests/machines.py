"""Synthetic machines with a topology, for references and verdicts: two packages, two L3s each, two
L2s per L3, two cores per L2, two threads per core (32 CPUs, every topology class), one latency per
class, and copies of them jittered, slowed in one class, or missing CPUs."""

import numpy as np

import corelat
from corelat._analysis import classes as _classes

#: One-way latency per topology class, ns: far enough apart that no class reads as another.
LATENCY = {"smt": 8.0, "l2": 15.0, "l3": 30.0, "package": 60.0, "packages": 120.0}
MODEL = "Synthetic EPYC 32"


def topology(first=0, offline=()):
    """A topology dict (``corelat.topology().to_dict()``'s layout) of the 32 CPUs ``first``..``first+31``."""
    rows = []
    for i in range(32):
        cpu = first + i
        if cpu in offline:
            continue
        core = i // 2
        rows.append({"cpu": cpu, "package": i // 16, "die": i // 16, "cluster": None, "core": core,
                     "core_id": core % 8, "l2": i // 4, "l3": i // 8, "node": i // 16, "nodes": [i // 16],
                     "siblings": [first + 2 * core, first + 2 * core + 1], "thread": i % 2, "allowed": True})
    return {"format": "corelat.topology", "version": 1, "root": "synthetic",
            "summary": "2 packages × 8 cores × 2 threads, 2 NUMA nodes, 4 L3", "offline": sorted(offline),
            "cpus": rows}


def machine(name="cn001", *, jitter=0.0, slow=None, missing=(), first=0, seed=0, kernel="cas"):
    """A value-only result of the synthetic machine: each pair ``LATENCY[class]`` × a factor within
    ±``jitter`` (uniform, one per pair); ``slow=(class, factor)`` scales one class; CPUs ``missing`` are
    offline (absent from the result, named offline by its topology)."""
    topo = topology(first)
    cpus = [r["cpu"] for r in topo["cpus"]]
    codes, names = _classes.from_topology(topo["cpus"], cpus)
    base = np.full(codes.shape, np.nan)
    for k, cls in enumerate(names):
        base[codes == k] = LATENCY[cls] * (slow[1] if slow and slow[0] == cls else 1.0)
    rng = np.random.default_rng(seed)
    n = len(cpus)
    f = rng.uniform(1 - jitter, 1 + jitter, (n, n))
    f = np.tril(f, -1) + np.tril(f, -1).T
    m = base * np.where(f > 0, f, 1.0)
    keep = [i for i, c in enumerate(cpus) if c not in missing]
    m = m[np.ix_(keep, keep)]
    md = {"hostname": name, "cpu_model": MODEL, "topology": topology(first, offline=missing),
          "topology_summary": topo["summary"], "elapsed_s": 28.0}
    return corelat.LatencyResult.from_matrix(m, [cpus[i] for i in keep], kernel=kernel, name=name,
                                             metadata=md)
