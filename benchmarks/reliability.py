"""Adversarial cases of issue 15 (items 4-10), run as subprocesses; prints the reliability table.

    python benchmarks/reliability.py                       # the installed corelat
    python benchmarks/reliability.py --before OLD_CHECKOUT # also a checkout of older code (with its
                                                           # compiled extension), side by side

A case fails when it hangs past its limit, prints a traceback or "internal error", exits with the
wrong status, runs out of the 1 GiB address space it is given, accepts a hostile file or loses a file.
The hang cases of items 1-3 (frozen partner, SCHED_FIFO, shrinking cpusets) are C work and not here.
"""

import argparse
import os
import random
import resource
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
import fuzzfiles as fz  # noqa: E402 (test helpers, found through the path set just above)
import hostile  # noqa: E402

# Started in the background (SIGINT ignored, which exec keeps), the children would ignore the Ctrl-Cs
# sent to them; a caught signal is reset to the default at exec instead.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

CAP = 1 << 30


def _cap():
    resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))


class Runner:
    def __init__(self, tree):
        self.env = dict(os.environ)
        self.env.pop("CORELAT_DEBUG", None)
        if tree:
            self.env["PYTHONPATH"] = tree

    def run(self, args, timeout=30, cap=True, python=False, **kw):
        cmd = [sys.executable, *(args if python else ["-m", "corelat", *map(str, args)])]
        try:
            return subprocess.run(cmd, check=False, capture_output=True, text=True,
                                  timeout=timeout, env=self.env,
                                  preexec_fn=_cap if cap else None, **kw)
        except subprocess.TimeoutExpired:
            return None

    def clean(self, p, codes=(2,)):
        """Ended in time with an expected status, one line on stderr, no traceback."""
        lines = [ln for ln in p.stderr.splitlines() if not ln.startswith("corelat: warning:")] if p else []
        return (p is not None and p.returncode in codes and "Traceback" not in p.stderr
                and "internal error" not in p.stderr and len(lines) <= 1)


def hostile_files(r, d):
    cases = hostile.generate(os.path.join(d, "hostile"))
    code = ("import sys, corelat\nfor p in sys.argv[1:]:\n    try:\n        corelat.load(p); "
            "print('accepted')\n"
            "    except corelat.InputError:\n        print('ok')\n    except BaseException as e:\n"
            "        print('raw', type(e).__name__)\n")
    p = r.run(["-c", code, *(path for _, path in cases)], timeout=600, python=True)
    ok = p.stdout.split().count("ok") if p else 0
    return len(cases), len(cases) - ok


def special_files(r, d):
    fifo = os.path.join(d, "fifo.npz")
    os.mkfifo(fifo)
    link = os.path.join(d, "x.npz")
    os.symlink("/dev/zero", link)
    sparse = os.path.join(d, "sparse.csv")
    with open(sparse, "wb") as f:
        f.truncate(8 << 30)
    paths = ["/dev/zero", "/dev/urandom", link, fifo, sparse, d]
    return len(paths), sum(not r.clean(r.run(["report", p])) for p in paths)


def sysfs_dumps(r, d):
    cpu = os.path.join(d, "dump", "sys/devices/system/cpu")
    for c in (0, 1):
        os.makedirs(os.path.join(cpu, f"cpu{c}/topology"))
        with open(os.path.join(cpu, f"cpu{c}/topology/core_id"), "w") as f:
            f.write(f"{c}\n")
    os.symlink("/dev/zero", os.path.join(cpu, "online"))
    os.symlink("/dev/urandom", os.path.join(cpu, "possible"))
    os.mkfifo(os.path.join(cpu, "cpu1/topology/thread_siblings_list"))
    root = os.path.join(d, "dump")
    cmds = [["topology", "--root", root], ["topology", "--root", root, "--json"],
            ["check", "--root", root, "--no-skew"]]
    return len(cmds), sum(not r.clean(r.run(c), codes=(0, 2)) for c in cmds)


def _old_file(r, path):
    code = ("import sys, numpy as np, corelat\ns = np.full((2, 2, 3), 50.0); s[0, 0] = s[1, 1] = np.nan\n"
            "corelat.LatencyResult(cpus=(0, 1), kernel='cas', samples=s, name='old').save(sys.argv[1])\n")
    r.run(["-c", code, path], python=True)


def _intact(r, path):
    p = r.run(["-c", "import sys, corelat; print(corelat.load(sys.argv[1]).name)", path], python=True)
    folder = os.path.dirname(path)
    return p is not None and p.stdout.strip() in ("old", "new") and not [
        n for n in os.listdir(folder) if n.endswith(".tmp")]


def saves(r, d):
    fails, cases = 0, 0
    for k in range(8):  # Ctrl-C somewhere inside a save over an existing file
        path = os.path.join(d, f"s{k}", "out.npz")
        os.makedirs(os.path.dirname(path))
        _old_file(r, path)
        p = subprocess.Popen([sys.executable, "-c", hostile.SAVE_LOOP, path], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE,
                             text=True, env=r.env)
        p.stdout.readline()
        time.sleep(0.2 + 0.13 * k)
        p.send_signal(signal.SIGINT)
        p.communicate(timeout=60)
        cases += 1
        fails += not _intact(r, path)
    path = os.path.join(d, "fsize", "out.npz")  # a file size limit hit mid-save
    os.makedirs(os.path.dirname(path))
    _old_file(r, path)
    p = r.run(["-c", hostile.SAVE_UNDER_FSIZE, path], python=True, cap=False)
    cases += 1
    fails += not (_intact(r, path) and p is not None and p.stdout.split()[-1:] == ["True"])
    mnt = os.path.join(d, "tiny")
    os.makedirs(mnt)
    if os.geteuid() == 0 and subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", mnt],
                                            check=False, capture_output=True).returncode == 0:
        try:  # a full disk
            path = os.path.join(mnt, "out.npz")
            _old_file(r, path)
            no_limit = hostile.SAVE_UNDER_FSIZE.replace("resource.setrlimit", "(lambda *a: None)")
            p = r.run(["-c", no_limit, path], python=True, cap=False)
            cases += 1
            fails += not (_intact(r, path) and p is not None and p.stdout.split()[-1:] == ["True"])
        finally:
            subprocess.run(["umount", mnt], check=False)
    link = os.path.join(d, "link.npz")  # a dangling symlink as -o
    os.symlink("real.npz", link)
    cpus = sorted(os.sched_getaffinity(0))[:2]
    p = r.run(["-o", link, "--cpus", f"{cpus[0]},{cpus[1]}", "5", "2"], timeout=300)
    cases += 1
    fails += not (p is not None and p.returncode == 0 and os.path.islink(link)
                  and os.path.isfile(os.path.join(d, "real.npz")))
    return cases, fails


def cpu_lists(r, d):
    cmds = [["--cpus", "0-5000"], ["--cpus", "0-20000"], ["--cpus", "0-50000"], ["locks", "0-1000000"]]
    fails = sum(not r.clean(r.run(c, timeout=20)) for c in cmds)
    code = ("import corelat\ntry:\n    corelat.measure(range(10**5))\nexcept corelat.InputError:\n    "
            "print('ok')\n")
    p = r.run(["-c", code], python=True, timeout=20)
    fails += not (p is not None and p.stdout.strip() == "ok")
    return len(cmds) + 1, fails


_API = r"""
import corelat
r = corelat.load(corelat.example_files()[0])
calls = [lambda: corelat.measure(kernel=["cas"]), lambda: corelat.measure(cpus=b"0,1"),
         lambda: corelat.measure(strategy="sample", topology=5),
         lambda: corelat.measure(strategy="sample", topology="x"),
         lambda: corelat.measure(strategy="sample", topology=[1, 2]), lambda: corelat.smt(topology=5),
         lambda: corelat.structure(r, topology=5), lambda: corelat.structure(r, topology="x")]
for c in calls:
    try:
        c(); print("no-error")
    except corelat.InputError:
        print("ok")
    except Exception as e:
        print("raw", type(e).__name__)
"""
_THREADS = r"""
import threading, corelat
r = corelat.load(corelat.example_files()[0])
def work():
    for _ in range(50):
        x = corelat.LatencyResult(cpus=r.cpus, kernel=r.kernel, samples=r.samples)
        x.median; x.mean; x.min; x.max; x.std
ts = [threading.Thread(target=work) for _ in range(8)]
[t.start() for t in ts]; [t.join() for t in ts]
"""


def _closed_stdout(r, args):
    rd, w = os.pipe()
    os.close(rd)
    try:
        return subprocess.run([sys.executable, "-m", "corelat", *args], check=False, stdout=w,
                              stderr=subprocess.PIPE, text=True,
                              timeout=60, env=r.env)
    finally:
        os.close(w)


def messages(r, d):
    cases, fails = 0, 0
    for k in range(12):  # Ctrl-C while starting
        p = subprocess.Popen([sys.executable, "-m", "corelat", "topology"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=r.env)
        time.sleep(0.03 + 0.02 * k)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
        if ("Fatal Python error" in err
                or "Traceback" in err and "_early.py" not in err and err.count("corelat/") <= 1):
            continue  # the interpreter itself was starting (no corelat code had run: nothing can catch it)
        cases += 1
        fails += "Traceback" in err
    for args in (["--version"], ["--help"]):
        p = _closed_stdout(r, args)
        cases += 1
        fails += not (p.returncode == 0 and p.stderr == "")
    for args in (["--no-such-flag"], ["--kernel", "bogus"], ["locks", "--bogus"], ["-o", ""],
                 ["check", "--root", "/nonexistent"]):
        cases += 1
        fails += not r.clean(r.run(args))
    p = r.run(["-c", _API], python=True)
    cases += 8
    fails += 8 - (p.stdout.split().count("ok") if p else 0)
    p = r.run(["-W", "always", "-c", _THREADS], python=True, timeout=300)
    cases += 1
    fails += p is None or "Warning" in p.stderr
    for mib in (200, 140, 110):  # ulimit -v
        def cap(limit=mib << 20):
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        p = subprocess.run([sys.executable, "-m", "corelat", "topology"], check=False,
                           capture_output=True, text=True,
                           timeout=60, env=r.env, preexec_fn=cap)
        cases += 1
        fails += "Traceback" in p.stderr
    return cases, fails


_CRAFTED_CHECK = r"""
import contextlib, io, sys, warnings, corelat
from corelat.cli import main
warnings.simplefilter("ignore")
for p in sys.argv[1:]:
    try:
        corelat.load(p)
    except corelat.InputError:
        print("ok"); continue
    except Exception as e:
        print("raw", type(e).__name__); continue
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        status = main(["report", p])
    print("ok" if status in (0, 2) and "internal error" not in err.getvalue() else "report", status)
"""


def _crafted(r, d, count, arrays_share):
    """Issue 24 item 11: ``count`` files, each a valid file of one kind changed at one place (header
    fields, or an array with probability ``arrays_share``), loaded and reported by the code under test."""
    rng = random.Random(24)
    seeds = fz.seeds(d)
    fails, done = 0, 0
    while done < count:
        paths = []
        for k in range(min(1000, count - done)):
            kind = rng.choice(sorted(seeds))
            header, arrays = seeds[kind]
            if rng.random() >= arrays_share or not arrays:
                op = rng.choice(["set", "set", "set", "del", "add"])
                header = fz.change_header(header, rng.choice(fz.places(header)), op, rng.choice(fz.HOSTILE))
            else:
                name = rng.choice(sorted(arrays))
                arrays = {**arrays, name: fz.change_array(arrays[name], rng.choice(fz.ARRAY_CHANGES))}
            path = os.path.join(d, f"crafted{k}.npz")
            fz.write(path, header, arrays)
            paths.append(path)
        p = r.run(["-c", _CRAFTED_CHECK, *paths], timeout=1800, python=True)
        lines = p.stdout.splitlines() if p else []
        fails += len(paths) - sum(ln.startswith("ok") for ln in lines)
        done += len(paths)
    return done, fails


def small_files(r, d):
    """Issue 24 items 6 and 10: small files that asked for gigabytes or minutes, an encrypted member."""
    cases = {"lines.csv": "x\n" * 12_000, "plot.gp": "$data << EOD\n" + "1\n" * 40_000 + "EOD\n",
             "dup.csv": "cpu," + ",".join(map(str, range(40_000))) + ",7\n"}
    paths = []
    for name, text in cases.items():
        paths.append(os.path.join(d, name))
        with open(paths[-1], "w") as f:
            f.write(text)
    with open(hostile_example(), "rb") as f:
        data = bytearray(f.read())
    for magic, at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):  # the zip flag: encrypted
        i = 0
        while (i := data.find(magic, i)) >= 0:
            data[i + at] |= 1
            i += 4
    paths.append(os.path.join(d, "locked.npz"))
    with open(paths[-1], "wb") as f:
        f.write(bytes(data))
    fails = sum(not r.clean(r.run(["report", p], timeout=30)) for p in paths)
    p = r.run(["fleet-report", d, "--expect", ",".join(f"n{k}x[0-999999]" for k in range(3000))], timeout=30)
    fails += not r.clean(p)
    return len(paths) + 1, fails


def hostile_example():
    return fz.corelat.example_files()[0]


def crafted_headers(r, d, quick=False):
    return _crafted(r, d, 300 if quick else 20_000, 0.0)


def crafted_arrays(r, d, quick=False):
    return _crafted(r, d, 100 if quick else 4_000, 1.0)


CATEGORIES = [
    ("hostile .npz files (tests/hostile.py)", hostile_files),
    ("special files as FILE (/dev/zero, urandom, FIFO, links, 8 GiB sparse, folder)", special_files),
    ("sysfs dumps linking to /dev/zero, urandom, FIFOs", sysfs_dumps),
    ("saves: Ctrl-C mid-save, RLIMIT_FSIZE, 64 KB tmpfs, dangling -o link", saves),
    ("absurd CPU lists (0-5000 ... 0-1000000, range(10**5))", cpu_lists),
    ("messages: early Ctrl-C, broken pipe, usage, API arguments, threads, ulimit -v", messages),
    ("small files, huge memory: 24 KB of `x` lines, a c2clat plot of 40,000 rows, a 40,000-label header "
     "with a duplicate, an encrypted member, `fleet-report --expect` of 3,000 x [0-999999]", small_files),
    ("schema: crafted header fields of latency, locks, smt, placement, fleet and check files "
     "(load + report)", crafted_headers),
    ("schema: crafted arrays (dtype, shape, values) of the same kinds (load + report)", crafted_arrays),
]


#: --quick (CI's benchmark step): the categories that take seconds, not the signal and save loops.
QUICK = ("hostile", "special", "sysfs", "CPU lists", "schema", "small files")
#: Categories that take a ``quick`` keyword (fewer cases under --quick).
SIZED = (crafted_headers, crafted_arrays)


def table(trees, only=None, quick=False):
    rows = []
    for name, fn in CATEGORIES:
        if only and only not in name or quick and not any(q in name for q in QUICK):
            continue
        row = [name]
        for tree in trees:
            with tempfile.TemporaryDirectory() as d:
                t = time.monotonic()
                cases, fails = fn(Runner(tree), d, quick) if fn in SIZED else fn(Runner(tree), d)
                row.append((cases, fails, time.monotonic() - t))
        rows.append(row)
        print(name, row[1:], file=sys.stderr, flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", metavar="DIR", help="checkout of older code to compare with (PYTHONPATH)")
    ap.add_argument("--only", metavar="WORD", help="run only the categories whose name holds WORD")
    ap.add_argument("--quick", action="store_true", help="only the quick categories (CI)")
    ap.add_argument("--before-only", action="store_true",
                    help="run only the --before tree (to run the two trees side by side, in two processes)")
    args = ap.parse_args()
    trees = ([args.before] if args.before else []) + ([] if args.before_only else [None])
    rows = table(trees, args.only, args.quick)
    head = ("| category | cases | failures before | failures after |" if args.before
            else "| category | cases | failures |")
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for name, *runs in rows:
        cells = [str(runs[-1][0])] + [str(f) for _, f, _ in runs]
        print(f"| {name} | " + " | ".join(cells) + " |")
    total = [sum(r[k + 1][1] for r in rows) for k in range(len(trees))]
    print(f"| **all** | {sum(r[-1][0] for r in rows)} | " + " | ".join(map(str, total)) + " |")


if __name__ == "__main__":
    main()
