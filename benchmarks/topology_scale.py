"""How long, and how much memory, does reading a large machine's topology take? (A benchmark.)

Builds a synthetic sysfs tree (``sys/devices/system/{cpu,node}``) of N CPUs as Linux lays one out: 2
packages, SMT 2 (CPU i and i + N/2 are siblings), an L2 per core, 2 NUMA nodes per package, and an L3
per package (as on Intel Xeons: every CPU lists the N/2 of its package) or per 16 CPUs (AMD's core
complexes), every file a kernel writes for topology and caches (lists and hex masks). Then prints, per
N and layout, the seconds and the peak memory (``tracemalloc``, in a second run) of
``corelat.topology(root)``, of its text view (what ``corelat topology --root`` prints) and of its JSON
(``--json``). The tree is written to /dev/shm where there is one (a disk's file creation would
dominate).

    python benchmarks/topology_scale.py [--quick]   # --quick: 512 CPUs, L3 per package

``write_tree`` is also what ``tests/test_topology_scale.py`` builds its 4,096-CPU tree with.
"""

import argparse
import json
import os
import tempfile
import time
import tracemalloc

import corelat


def _cpulist(cpus):
    """``0-7,2048-2055``: the sysfs list of a sorted sequence of CPU ids."""
    parts, start, prev = [], None, None
    for c in cpus:
        if start is None:
            start = prev = c
        elif c == prev + 1:
            prev = c
        else:
            parts.append(f"{start}-{prev}" if prev > start else str(start))
            start = prev = c
    if start is not None:
        parts.append(f"{start}-{prev}" if prev > start else str(start))
    return ",".join(parts)


def _cpumask(cpus, n):
    """The hex mask of ``cpus`` in sysfs's comma-separated 32-bit words, most significant first."""
    value = 0
    for c in cpus:
        value |= 1 << c
    words = max(1, -(-n // 32))
    return ",".join(format((value >> (32 * w)) & 0xFFFFFFFF, "08x") for w in reversed(range(words)))


def _write(folder, files):
    """Write ``{relative path: text}`` below ``folder``."""
    made = set()
    for rel, text in files.items():
        path = os.path.join(folder, rel)
        parent = os.path.dirname(path)
        if parent not in made:
            os.makedirs(parent, exist_ok=True)
            made.add(parent)
        with open(path, "w") as f:
            f.write(text)


def _cpu_files(package, core_id, core_set, package_set, l3_set):
    """``{path below cpuN: text}``; each set is its ``(list, mask)`` texts."""
    files = {
        "topology/physical_package_id": f"{package}\n",
        "topology/die_id": "0\n",
        "topology/core_id": f"{core_id}\n",
    }
    for name, (listed, mask) in (
        ("core_cpus", core_set),
        ("thread_siblings", core_set),
        ("package_cpus", package_set),
        ("core_siblings", package_set),
    ):
        files[f"topology/{name}_list"], files[f"topology/{name}"] = listed, mask
    for index, (level, kind, (listed, mask)) in enumerate(
        [
            (1, "Data", core_set),
            (1, "Instruction", core_set),
            (2, "Unified", core_set),
            (3, "Unified", l3_set),
        ]
    ):
        d = f"cache/index{index}"
        files[f"{d}/level"], files[f"{d}/type"] = f"{level}\n", f"{kind}\n"
        files[f"{d}/shared_cpu_list"], files[f"{d}/shared_cpu_map"] = listed, mask
    return files


def write_tree(root, n, packages=2, smt=2, l3_cpus=None, nodes_per_package=2, masks=True):
    """Write the sysfs tree of an ``n``-CPU machine below ``root`` (see the module's docstring); its
    L3 is shared by ``l3_cpus`` CPUs (None: the package's). ``masks=False`` leaves out the hex masks
    and the older names of the lists (fewer files, the same topology)."""
    cores = n // smt
    cores_per_package = cores // packages
    cores_per_l3 = cores_per_package if l3_cpus is None else l3_cpus // smt
    cores_per_node = cores_per_package // nodes_per_package

    def group(first_core, count):
        return [core + t * cores for t in range(smt) for core in range(first_core, first_core + count)]

    texts = {}  # the same few lists are written by many CPUs: format each once

    def fmt(kind, first_core, count):
        key = (kind, first_core, count)
        if key not in texts:
            cpus = sorted(group(first_core, count))
            texts[key] = (_cpulist(cpus) + "\n", _cpumask(cpus, n) + "\n")
        return texts[key]

    system = os.path.join(root, "sys", "devices", "system")
    cpu_root = os.path.join(system, "cpu")
    _write(cpu_root, {name: f"0-{n - 1}\n" for name in ("online", "possible", "present")})
    for cpu in range(n):
        core = cpu % cores
        package = core // cores_per_package
        core_set = fmt("core", core, 1)
        package_set = fmt("package", package * cores_per_package, cores_per_package)
        l3_set = fmt("l3", core - core % cores_per_l3, cores_per_l3)
        files = _cpu_files(package, core % cores_per_package, core_set, package_set, l3_set)
        _write(
            os.path.join(cpu_root, f"cpu{cpu}"),
            {
                rel: text
                for rel, text in files.items()
                if masks or rel.endswith(("_list", "_id", "level", "type"))
            },
        )
    for node in range(packages * nodes_per_package):
        cpulist, cpumap = fmt("node", node * cores_per_node, cores_per_node)
        _write(os.path.join(system, "node", f"node{node}"), {"cpulist": cpulist, "cpumap": cpumap})
    return root


def measure(root, what):
    """``(seconds, peak bytes)`` of ``what(root)``: timed alone, then run again under tracemalloc
    (which slows Python down several times) for the peak."""
    t0 = time.perf_counter()
    what(root)
    seconds = time.perf_counter() - t0
    tracemalloc.start()
    try:
        what(root)
        return seconds, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def scratch():
    """A temporary folder, in memory where the machine has /dev/shm."""
    shm = "/dev/shm"
    return tempfile.TemporaryDirectory(dir=shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None)


STEPS = (
    ("topology()", corelat.topology),
    ("text view", lambda root: str(corelat.topology(root))),
    ("JSON", lambda root: json.dumps(corelat.topology(root).to_dict(), indent=1)),
)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="512 CPUs, L3 per package only (for CI)")
    args = p.parse_args()
    sizes = (512,) if args.quick else (512, 4096, 8192)
    layouts = (("package", None),) if args.quick else (("package", None), ("16 CPUs", 16))
    print(f"{'CPUs':>6}  {'L3 per':<8} {'step':<11} {'seconds':>8}  {'peak MiB':>8}  {'bytes/CPU':>9}")
    for n in sizes:
        for layout, l3_cpus in layouts:
            with scratch() as root:
                write_tree(root, n, l3_cpus=l3_cpus)
                for name, what in STEPS:
                    seconds, peak = measure(root, what)
                    print(
                        f"{n:>6}  {layout:<8} {name:<11} {seconds:>8.2f}  {peak / 2**20:>8.1f}  "
                        f"{peak // n:>9,}",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
