"""Fleet analysis at scale, and how often it is wrong.

1. **Scale.** Writes ``--nodes`` result files of a ``--cpus``-CPU machine with an OS topology
   (2 packages, L3 per 8 cores, SMT2; one value per pair by default, or ``--samples`` raw samples
   per pair as ``corelat fleet`` leaves them: with their median matrix as its own member, or without
   it with ``--old-layout``, as corelat wrote them before), then times ``corelat.fleet(folder)`` in a
   fresh process and reports its peak memory (RSS): the analysis streams the files, keeping per node
   its class medians and per group a running median matrix.
2. **Errors.** Over ``--fleets`` random fleets of 50 nodes per shared peer result file (each pair
   jittered within the file's own spread, each node by a 2 % overall factor): the false-positive rate
   (node-class flags with no node slowed) and the detection rate of one node slowed by 25 % in one
   class (flagged, and nothing else flagged).

   With ``--folder DIR`` the files are generated once and reused; ``--runs`` (2) analyses each run in
   a fresh process: record the last (warm page cache).

    python benchmarks/fleet.py [--nodes 1000] [--cpus 192] [--samples 1] [--old-layout] [--fleets 100]
                               [--folder DIR] [--runs 2]
"""

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

import corelat
from corelat._core import npz as _npz
from corelat._analysis import classes as _fleet_classes
from corelat._fleet import synth as _fleet_synth

SHARED = os.environ.get("CORELAT_SHARED", os.path.join(os.path.dirname(__file__), "..", "..", "shared"))
PEERS = os.path.join(SHARED, "fixtures", "peer-results", "core-to-core-latency")


def machine(n):
    """A Topology of ``n`` CPUs: 2 packages, L3 per 8 cores, 2 threads per core (siblings c, c + n/2)."""
    half = n // 2
    rows = []
    for cpu in range(n):
        core = cpu % half
        package = core // (half // 2)
        l3 = core // 8
        rows.append({"cpu": cpu, "package": package, "die": 0, "cluster": None, "core": core, "core_id": core,
                     "l2": core, "l3": l3 * 8, "node": package, "nodes": (package,),
                     "siblings": (core, core + half), "thread": cpu // half, "allowed": True})
    return corelat.Topology(rows, root="/synthetic")


def write_fleet(folder, nodes, n, samples, seed=0, old_layout=False):
    topo = machine(n)
    codes, names = _fleet_classes.from_topology(topo.records(), topo.cpus)
    typical = {"smt": 8.0, "l2": 12.0, "l3": 35.0, "package": 60.0, "packages": 140.0}
    base = np.zeros((n, n))
    for k, name in enumerate(names):
        base[codes == k] = typical[name]
    summary = topo.headline()
    md = {"cpu_model": "Synthetic 2-socket CPU", "topology": topo.to_dict(), "topology_summary": summary,
          "governor": "performance"}
    rng = np.random.default_rng(seed)
    low = np.tril(np.ones((n, n), dtype=bool), -1)
    for i in range(nodes):
        m = base * np.exp(0.03 * rng.standard_normal((n, n)) + 0.02 * rng.standard_normal())
        m = np.where(low, m, m.T)
        np.fill_diagonal(m, np.nan)
        name = f"node{i:04d}"
        if samples == 1:
            r = corelat.LatencyResult.from_matrix(m, topo.cpus, kernel="cas", name=name, metadata=md)
        else:
            s = m[:, :, None] * np.exp(0.05 * rng.standard_normal((n, n, samples)))
            r = corelat.LatencyResult(cpus=topo.cpus, kernel="cas", samples=s, metadata=md, name=name)
        path = os.path.join(folder, name + ".npz")
        if old_layout:
            header, arrays = r._to_npz()
            arrays.pop("median", None)
            _npz.write(path, r._KIND, header, arrays)
        else:
            r.save(path)


PEAK = """
def peak_mib():
    # VmHWM starts afresh at exec; ru_maxrss may keep the forking parent's size (an upper bound).
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration, ValueError):
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
"""

ANALYSE = PEAK + """
import sys, time
import corelat
t = time.perf_counter()
r = corelat.fleet(sys.argv[1])
dt = time.perf_counter() - t
print(dt, peak_mib(), r.summary()["nodes"], len(r.groups))
"""

BASELINE = PEAK + "import corelat; print(peak_mib())"


class TreeWatch:
    """Peak memory of a process and all its descendants together (the fleet's reader processes),
    and their CPU time, sampled every 20 ms from /proc: the sum of their PSS (a page shared by k
    processes counts 1/k in each: the memory they take together) and of their RSS (shared pages
    counted in each process: an upper bound). Linux only; zeros elsewhere."""

    def __init__(self, pid):
        self.pid, self.peak_mib, self.peak_rss_mib, self._cpu = pid, 0.0, 0.0, {}
        self._done = threading.Event()
        self._tick = os.sysconf("SC_CLK_TCK")
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    @property
    def cpu_s(self):
        return sum(self._cpu.values()) / self._tick

    def _tree(self):
        out, todo = [], [self.pid]
        while todo:
            pid = todo.pop()
            out.append(pid)
            with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{pid}/children") as f:
                todo += [int(x) for x in f.read().split()]
        return out

    def _run(self):
        while not self._done.wait(0.02):
            rss = pss = 0
            for pid in self._tree():
                with contextlib.suppress(OSError, ValueError, IndexError):
                    with open(f"/proc/{pid}/stat") as f:
                        fields = f.read().rsplit(")", 1)[1].split()
                    self._cpu[pid] = int(fields[11]) + int(fields[12])  # utime + stime
                    rss += int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
                    with open(f"/proc/{pid}/smaps_rollup") as f:
                        pss += next(int(line.split()[1]) for line in f if line.startswith("Pss:")) * 1024
            self.peak_mib = max(self.peak_mib, pss / 2**20)
            self.peak_rss_mib = max(self.peak_rss_mib, rss / 2**20)

    def stop(self):
        self._done.set()
        self._thread.join()


def _generated(folder, nodes, n, samples, old_layout):
    """Write the fleet into ``folder`` unless a previous run left exactly it there (generate once)."""
    stamp = os.path.join(folder, ".bench.json")
    want = {"nodes": nodes, "cpus": n, "samples": samples, "old_layout": old_layout}
    if os.path.exists(stamp):
        with open(stamp) as f:
            if json.load(f) == want:
                return None
    os.makedirs(folder, exist_ok=True)
    t = time.perf_counter()
    write_fleet(folder, nodes, n, samples, old_layout=old_layout)
    with open(stamp, "w") as f:
        json.dump(want, f)
    return time.perf_counter() - t


def scale(nodes, n, samples, old_layout=False, folder=None, runs=2):
    """Time ``corelat.fleet(folder)`` ``runs`` times, each in a fresh process; the last run's page
    cache is warm (the figure to record). ``folder`` keeps the files for the next call."""
    with contextlib.ExitStack() as stack:
        if folder is None:
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="fleet-bench-"))
        gen = _generated(folder, nodes, n, samples, old_layout)
        size = sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder)) / 2**20
        base_rss = float(subprocess.check_output([sys.executable, "-c", BASELINE]))
        got_runs = []
        for _ in range(runs):
            p = subprocess.Popen([sys.executable, "-c", ANALYSE, folder], stdout=subprocess.PIPE)
            tree = TreeWatch(p.pid)
            out = p.communicate()[0].split()
            tree.stop()
            if p.returncode:
                raise SystemExit(f"the analysis failed (exit {p.returncode})")
            got_runs.append((float(out[0]), float(out[1]), int(out[2]), int(out[3]),
                             (tree.peak_mib, tree.peak_rss_mib), tree.cpu_s))
    layout = " (old layout: no median member)" if old_layout and samples > 1 else ""
    made = "reused" if gen is None else f"written in {gen:.0f} s"
    print(f"{nodes} nodes x {n} CPUs, {samples} sample(s) per pair{layout}: {size:.0f} MiB of files ({made})")
    for k, (dt, rss, got, groups, tree_mib, cpu) in enumerate(got_runs, 1):
        print(f"  run {k} of {runs}: corelat.fleet(folder): {dt:.1f} s ({1000 * dt / nodes:.1f} ms a node), "
              f"peak RSS {rss:.0f} MiB (import corelat alone: {base_rss:.0f} MiB), with its reader "
              f"processes {tree_mib[0]:.0f} MiB PSS ({tree_mib[1]:.0f} MiB RSS summed); "
              f"CPU {cpu:.1f} s ({1000 * cpu / nodes:.1f} ms a node); "
              f"{got} nodes in {groups} group(s); load average {os.getloadavg()[0]:.1f}")


def errors(fleets):
    files = sorted(f for f in os.listdir(PEERS) if f.endswith(".csv") and f != "published.csv")  # the index
    print(f"{fleets} random fleets of 50 nodes per peer file ({len(files)} files)")
    print(f"{'machine':40} {'classes':>7} {'false flags':>11} {'FP rate':>9} {'fleets w/ FP':>12} "
          f"{'25% found':>9} {'exactly':>8}")
    tot_tests = tot_fp = 0
    for f in files:
        base = corelat.load(os.path.join(PEERS, f))
        names = _fleet_classes.present(*_fleet_synth._classification(base))
        fp = fleets_fp = found = exact = 0
        for seed in range(fleets):
            clean = corelat.fleet(_fleet_synth.copies(base, 50, seed=seed))
            fp += len(clean.outliers)
            fleets_fp += bool(clean.outliers)
            cls = names[seed % len(names)]
            slow = corelat.fleet(_fleet_synth.copies(base, 50, seed=10_000 + seed,
                                                     slow=(seed % 50, cls, 1.25)))
            flags = [(o.node, o.cls) for o in slow.outliers]
            found += (f"node{seed % 50:03d}", cls) in flags
            exact += flags == [(f"node{seed % 50:03d}", cls)]
        tests = fleets * 50 * len(names)
        tot_tests += tests
        tot_fp += fp
        print(f"{f[:-4][:40]:40} {len(names):>7} {fp:>11} {fp / tests:>9.2%} {fleets_fp:>12} "
              f"{found / fleets:>9.0%} {exact / fleets:>8.0%}")
    print(f"overall false-positive rate: {tot_fp} of {tot_tests} node-class tests ({tot_fp / tot_tests:.3%})")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--cpus", type=int, default=192)
    ap.add_argument("--samples", type=int, default=1, help="raw samples per pair in the generated files")
    ap.add_argument("--old-layout", action="store_true",
                    help="write the files without their median member, as corelat did before")
    ap.add_argument("--fleets", type=int, default=100, help="random fleets per peer file for the error rates")
    ap.add_argument("--folder", metavar="DIR",
                    help="keep the generated node files here and reuse them on the next call (generate once)")
    ap.add_argument("--runs", type=int, default=2,
                    help="analyses of the folder, each in a fresh process (record the last: warm page cache)")
    ap.add_argument("--skip-scale", action="store_true")
    ap.add_argument("--skip-errors", action="store_true")
    ap.add_argument("--quick", action="store_true",
                    help="20 nodes of 16 CPUs, 3 samples per pair, 3 fleets per peer file (for CI)")
    args = ap.parse_args(argv)
    if args.quick:
        args.nodes, args.cpus, args.fleets, args.samples = 20, 16, 3, max(args.samples, 3)
    if not args.skip_scale:
        scale(args.nodes, args.cpus, args.samples, args.old_layout, args.folder, args.runs)
    if not args.skip_errors:
        if not os.path.isdir(PEERS):
            sys.exit(f"peer result files not found at {PEERS} (set CORELAT_SHARED)")
        errors(args.fleets)


if __name__ == "__main__":
    main()
