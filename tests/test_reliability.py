"""Adversarial cases of issues 15 (items 4-10) and 24, run as subprocesses of the installed corelat.

A case fails when it hangs past its limit, prints a traceback or "internal error", exits with the
wrong status, runs out of the 1 GiB address space it is given, accepts a hostile file or loses a file.
The hang cases of items 1-3 (frozen partner, SCHED_FIFO, shrinking cpusets) are C work and not here.

The ``campaign`` tier: hundreds of subprocesses, about two minutes here, so CI runs it in its benchmark
step (.ci/steps/50-benchmarks.sh), not with the whole suite. ``CORELAT_CAMPAIGN_FULL=1`` runs the
campaign's full sizes (20,000 crafted headers, 4,000 crafted arrays, 38 stops, 6 moves: about ten
minutes) instead of CI's (300, 100, 8, 2).
"""

import os
import pathlib
import random
import resource
import shutil
import signal
import subprocess
import sys
import time

import fuzzfiles as fz
import hostile
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
#: The campaign's full sizes (``CORELAT_CAMPAIGN_FULL=1``) instead of CI's.
FULL = os.environ.get("CORELAT_CAMPAIGN_FULL", "") not in ("", "0")

CAP = 1 << 30


def _cap():
    resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))


class Runner:
    """Runs the installed corelat (``python -m corelat ARGS``) in the user's environment, each command
    under a 1 GiB address-space cap; ``bad`` keeps what :meth:`clean` refused, for the failure's message."""

    def __init__(self):
        self.env = dict(os.environ)
        self.env.pop("CORELAT_DEBUG", None)
        self.bad = []

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
        ok = (p is not None and p.returncode in codes and "Traceback" not in p.stderr
              and "internal error" not in p.stderr and len(lines) <= 1)
        if not ok:
            self.bad.append((p.args[3:], p.returncode, p.stderr[-400:]) if p else "a hang past its limit")
        return ok


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
    paths = ["/dev/zero", "/dev/urandom", link, fifo, sparse]
    fails = sum(not r.clean(r.run(["report", p])) for p in paths)
    # A folder is a fleet's to `report` (exit 0 for an empty one, nothing judged), never a traceback.
    return len(paths) + 1, fails + (not r.clean(r.run(["report", d]), codes=(0, 1, 2)))


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


# -- issue 24 (h24c): stops, moves and progress ----------------------------------------------

def _pinned_worker(pid):
    """A measuring thread of pid (pinned to one CPU, unlike the main thread and OpenBLAS's), or None."""
    try:
        tids = [int(t) for t in os.listdir(f"/proc/{pid}/task") if int(t) != pid]
    except OSError:
        return None
    for t in tids:
        try:
            if len(os.sched_getaffinity(t)) == 1:
                return t
        except OSError:
            pass
    return None


def _when_measuring(p, timeout=60):
    deadline = time.monotonic() + timeout
    while p.poll() is None and _pinned_worker(p.pid) is None and time.monotonic() < deadline:
        time.sleep(0.01)


# Fixed-size runs of a few seconds on 2 CPUs (one pair), so that a stop lands in a kernel's waits.
_STOP_SIZES = {"cas": ["1000", "300"], "rw": ["1000", "200"], "oneway": ["1000", "100"],
               "read-modified": ["1", "150"]}


def stops(r, d, runs=38 if FULL else 8):
    """Issue 24 item 8 as reported: Ctrl-Z (SIGTSTP) or SIGSTOP for 2-3 s in mid-sweep, then SIGCONT,
    with the default 1 s time-out; a case fails unless the run exits 0 and saves its -o file."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return 0, 0
    kernels = sorted(_STOP_SIZES)
    fails = 0
    for k in range(runs):
        kernel = kernels[k % len(kernels)]
        sig = (signal.SIGSTOP, signal.SIGTSTP)[(k // len(kernels)) % 2]
        out = os.path.join(d, f"stop{k}.npz")
        p = subprocess.Popen([sys.executable, "-m", "corelat", "-c", f"{cpus[0]},{cpus[-1]}", "--kernel",
                              kernel, "--no-progress", *_STOP_SIZES[kernel], "-o", out],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=r.env)
        _when_measuring(p)
        time.sleep(0.3)
        p.send_signal(sig)
        time.sleep(2.0 + k % 2)
        p.send_signal(signal.SIGCONT)
        try:
            p.communicate(timeout=180)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            fails += 1
            continue
        fails += p.returncode != 0 or not os.path.exists(out)
    return runs, fails


def moves(r, d, runs=6 if FULL else 2):
    """Issue 24: `taskset -a -p -c FIRST PID` in mid-pair. A case fails unless the run exits 0 and its
    output says that the pair was moved and measured again."""
    cpus = sorted(os.sched_getaffinity(0))
    taskset = shutil.which("taskset")
    if len(cpus) < 2 or not taskset:
        return 0, 0
    fails = 0
    for k in range(runs):
        kernel = ("rw", "cas")[k % 2]
        p = subprocess.Popen([sys.executable, "-m", "corelat", "-c", f"{cpus[0]},{cpus[-1]}", "--kernel",
                              kernel, "--no-progress", "--no-retest", "200000", "10"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=r.env)
        _when_measuring(p)
        time.sleep(0.05)
        subprocess.run([taskset, "-a", "-p", "-c", str(cpus[0]), str(p.pid)], check=False,
                       capture_output=True)
        try:
            out, err = p.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            fails += 1
            continue
        fails += p.returncode != 0 or "moved a measuring thread" not in out + err
    return runs, fails


_PROGRESS = r"""
import numpy as np
from corelat._measure import sweep
from corelat._system import validate
validate.allowed_cpus = lambda: list(range(8))
def fake(a, b, k):  # pairs within a block of 4: odd sums bimodal (re-tested); across blocks alike
    if a // 4 == b // 4 and (a + b) % 2:
        return np.where(np.arange(k) % 2 == 0, 30.0, 90.0)
    return np.full(k, 50.0) + 0.01 * np.arange(k)
for options in ({"retest": True}, {"retest": 3}, {"retest": 100}, {"retest": False},
                {"strategy": "sample", "partition": [[0, 1, 2, 3], [4, 5, 6, 7]]}):
    seen = []
    sweep.measure_with(fake, list(range(8)), samples=40, progress=lambda d, t: seen.append((d, t)), **options)
    fractions = [d / t for d, t in seen]
    print("ok" if fractions == sorted(fractions) and seen[-1][0] == seen[-1][1] else "back")
"""


def progress(r, d):
    """Issue 24: the progress a sweep reports never goes back (fake measurers, five sweeps)."""
    p = r.run(["-c", _PROGRESS], python=True, timeout=120)
    return 5, 5 - (p.stdout.split().count("ok") if p else 0)


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


def crafted_headers(r, d):
    return _crafted(r, d, 20_000 if FULL else 300, 0.0)


def crafted_arrays(r, d):
    return _crafted(r, d, 4_000 if FULL else 100, 1.0)


# -- issue 24 (h24a): what the command writes, and its messages ----------------------------------
#: ``python tests/fake_cli.py ARGS`` (CORELAT_FAKE_RESULT=FILE): the command with measuring replaced.
FAKE_CLI = os.path.join(HERE, "fake_cli.py")
_CANNED = r"""
import sys, numpy as np, corelat
from corelat._measure.locks import summarise
s = np.random.default_rng(1).lognormal(3, 0.3, size=(3, 3, 8)); s[np.arange(3), np.arange(3)] = np.nan
lat = corelat.LatencyResult(cpus=(0, 1, 2), kernel="cas", samples=s, name="lat",
                            metadata={"parameters": {"samples": 8, "round_trips": 50}, "cpu_model": "x"})
raw = {"calls": [[100, 100], [20, 20]], "ticks": [[2000] * 2, [2000] * 2], "sermin": [[60, 60], [90, 90]],
       "sercalls": [[5, 5], [7, 7]], "counter": [0, 54]}
data, threads = summarise(["baseline", "lock-pthread-mutex"], [0, 1], raw, 2.0, 50.0)
lat.save(sys.argv[1] + "/latency.npz")
corelat.LockResult(cpus=(0, 1), shared=True, duration=1.0, data=data, threads=threads,
                   metadata={"timer": {"name": "tsc"}, "timer_mhz": 2000.0}).save(sys.argv[1] + "/locks.npz")
corelat.PlacementResult(["initiator", "responder"], [lat, lat]).save(sys.argv[1] + "/placement.npz")
"""
_STDOUT_COMMANDS = {"measure": ("latency", ["50", "20"]), "--csv": ("latency", ["--csv", "50", "20"]),
                    "locks": ("locks", ["locks"]), "placement": ("placement", ["placement", "10", "3"])}


def _fake(r, d, canned, args, out, stdout, shell="", extra_env=None):
    env = {**r.env, "CORELAT_FAKE_RESULT": os.path.join(d, canned + ".npz"), **(extra_env or {})}
    cmd = [sys.executable, FAKE_CLI, *args, "-o", out]
    if shell:
        cmd = ["bash", "-c", " ".join(f"'{a}'" for a in cmd) + " " + shell]
    try:
        return subprocess.run(cmd, check=False, stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=60,
                              env=env, cwd=d, preexec_fn=_cap)
    except subprocess.TimeoutExpired:
        return None


def stdout_losses(r, d):
    """Item 1: the -o file with stdout a pipe whose reader left, closed, on a full disk, in ASCII."""
    r.run(["-c", _CANNED, d], python=True)
    cases, fails = 0, 0
    for name, (canned, args) in _STDOUT_COMMANDS.items():
        for how in ("broken", "closed", "full", "ascii"):
            out = os.path.join(d, f"{name.strip('-')}-{how}." + ("csv" if name == "--csv" else "npz"))
            rd, w = os.pipe()
            os.close(rd)
            with open("/dev/full", "w") as full:
                stdout = {"broken": w, "closed": None, "full": full, "ascii": subprocess.DEVNULL}[how]
                p = _fake(r, d, canned, args, out, stdout, shell=">&-" if how == "closed" else "",
                          extra_env={"PYTHONIOENCODING": "ascii"} if how == "ascii" else None)
            os.close(w)
            cases += 1
            fails += not (p is not None and os.path.isfile(out) and "Traceback" not in p.stderr
                          and "internal error" not in p.stderr
                          and (how != "full" or "standard output" in p.stderr))
    return cases, fails


_PLOT_FSIZE = r"""
import resource, signal, sys
from corelat.cli import main
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[3]), resource.RLIM_INFINITY))
sys.exit(main(["plot", sys.argv[1], "-o", sys.argv[2]]))
"""


def plot_saves(r, d):
    """Item 2: plot -o over an old image under file size limits of 2, 4 and 16 KiB and on a full disk."""
    r.run(["-c", _CANNED, d], python=True)
    cases, fails = 0, 0
    targets = [(os.path.join(d, f"old{k}.png"), limit) for k, limit in enumerate((2048, 4096, 16384))]
    mnt = os.path.join(d, "tiny")
    os.makedirs(mnt)
    mounted = os.geteuid() == 0 and subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", mnt],
                                                   check=False, capture_output=True).returncode == 0
    if mounted:
        targets.append((os.path.join(mnt, "old.png"), 1 << 30))
    try:
        for path, limit in targets:
            before = b"old image " * (5000 if mounted and path.startswith(mnt) else 100)  # no room for both
            pathlib.Path(path).write_bytes(before)
            p = r.run(["-c", _PLOT_FSIZE, os.path.join(d, "latency.npz"), path, str(limit)], python=True,
                      timeout=120)
            cases += 1
            fails += not (p is not None and pathlib.Path(path).read_bytes() == before and p.returncode == 1
                          and not [n for n in os.listdir(os.path.dirname(path)) if n.endswith(".tmp")])
    finally:
        if mounted:
            subprocess.run(["umount", mnt], check=False)
    return cases, fails


_SAVE = "import sys, corelat\ncorelat.load(sys.argv[1]).save(sys.argv[2])\n"


def links_and_modes(r, d):
    """Items 3-4: links another user planted in a sticky world-writable folder; set-id bits of an old file."""
    if os.geteuid() != 0:
        return 0, 0
    r.run(["-c", _CANNED, d], python=True)
    src = os.path.join(d, "latency.npz")
    r.env["CORELAT_FAKE_RESULT"] = src
    sticky, victim = os.path.join(d, "sticky"), os.path.join(d, "victim")
    os.makedirs(sticky)
    os.chmod(sticky, 0o1777)
    os.makedirs(victim)
    cases, fails = 0, 0
    for k, target in enumerate(("important.conf", "newfile", "important.conf")):
        pathlib.Path(victim, "important.conf").write_text("keep me")
        link = os.path.join(sticky, f"result{k}.npz")
        os.symlink(os.path.join(victim, target), link)
        os.lchown(link, 65534, 65534)
        r.run(["-c", _SAVE, src, link] if k < 2 else [FAKE_CLI, "50", "5", "-o", link], python=True)
        cases += 1
        fails += not (pathlib.Path(victim, "important.conf").read_bytes() == b"keep me"
                      and not os.path.exists(os.path.join(victim, "newfile")))
    for mode in (0o4755, 0o2755, 0o6755):
        path = os.path.join(d, f"owned{mode:o}.npz")
        with open(path, "wb") as f:
            f.write(b"old")
        os.chown(path, 65534, 65534)
        os.chmod(path, mode)
        r.run(["-c", _SAVE, src, path], python=True)
        cases += 1
        fails += bool(os.stat(path).st_mode & (0o6000))
    return cases, fails


def _default_endings():
    # A user's shell leaves SIGTERM and SIGHUP at their defaults; under nohup (a CI started that way)
    # SIGHUP comes ignored, the save loop rightly went on, and the case waited 60 s for nothing.
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


def term_saves(r, d):
    """Item 9: SIGTERM and SIGHUP at 8 points inside a save over an existing file: no .tmp left."""
    cases, fails = 0, 0
    for k in range(8):
        path = os.path.join(d, f"t{k}", "out.npz")
        os.makedirs(os.path.dirname(path))
        _old_file(r, path)
        p = subprocess.Popen([sys.executable, "-c", hostile.SAVE_LOOP, path], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=r.env, preexec_fn=_default_endings)
        p.stdout.readline()
        time.sleep(0.2 + 0.13 * k)
        p.send_signal(signal.SIGTERM if k % 2 == 0 else signal.SIGHUP)
        p.communicate(timeout=60)
        cases += 1
        fails += not _intact(r, path)
    return cases, fails


_ESC = "\x1b]0;owned\x07\x1b[2J\r\x1b[31m"
_CRAFTED = r"""
import sys, numpy as np, corelat
esc = sys.argv[2]
s = np.full((2, 2, 3), 50.0); s[0, 0] = s[1, 1] = np.nan
corelat.LatencyResult(cpus=(0, 1), kernel="cas", samples=s, name="n" + esc,
                      metadata={"cpu_model": "cpu" + esc, "hostname": "host" + esc,
                                "warnings": ["warn" + esc], "notes": ["note" + esc]}).save(sys.argv[1])
"""


def escapes(r, d):
    """Item 5: ESC, OSC, BEL and CR in a file's fields and in file names, through report, compare, plot,
    and error messages: none reaches the terminal raw."""
    crafted = os.path.join(d, "crafted.npz")
    named = os.path.join(d, f"x{_ESC}.npz")
    r.run(["-c", _CRAFTED, crafted, _ESC], python=True)
    r.run(["-c", _CRAFTED, named, _ESC], python=True)
    runs = [["report", crafted], ["report", named], ["report", "--json", crafted],
            ["compare", crafted, named], ["compare", crafted, crafted, "--names", f"a{_ESC}", "b"],
            ["report", os.path.join(d, f"no{_ESC}")],
            ["plot", named, "-o", os.path.join(d, f"p{_ESC}.png")], ["topology", "--root", f"/no{_ESC}"],
            ["-o", os.path.join(d, f"no{_ESC}", "x.npz")], ["--cpus", f"0{_ESC}"]]
    fails = 0
    for args in runs:
        p = r.run(args, timeout=120)
        fails += p is None or any(c in p.stdout + p.stderr for c in "\x1b\x07\r")
    return len(runs), fails


_NO_ROOM = r"""
import sys
class NoRoom:
    def find_spec(self, name, path=None, target=None):
        if name == "corelat._corelat":
            raise ImportError("_corelat.so: failed to map segment from shared object")
sys.meta_path.insert(0, NoRoom())
import corelat
try:
    corelat.measure()
except corelat.CorelatError as e:
    print(e)
"""
_NO_EXT = ("import sys; sys.modules['corelat._corelat'] = None\nimport corelat\n"
           "try:\n    corelat.measure()\nexcept corelat.CorelatError as e:\n    print(e)\n")


#: ``corelat compare FILE`` with a bug planted: an internal error, a traceback only when asked for.
_A_BUG = ("import sys\nfrom corelat.cli import cmd_compare, main\n"
          "cmd_compare.compare = lambda *a, **k: 1 / 0\nsys.exit(main(['compare', sys.argv[1]]))\n")


def _nproc_one():
    resource.setrlimit(resource.RLIMIT_NPROC, (1, 1))


def cli_messages(r, d):
    """The command-line items and items 12-13: each a message that must (not) say something."""
    r.run(["-c", _CANNED, d], python=True)
    lat, locks = os.path.join(d, "latency.npz"), os.path.join(d, "locks.npz")
    checks = [
        (["--retest", "1000", "300", "--cpus", "0,1"],
         lambda p: p.returncode == 2 and "--retest=" in p.stderr),
        (["compare", locks, lat], lambda p: "locks result" in p.stderr and "latency matrix" in p.stderr),
        (["-c", _NO_EXT], lambda p: "reinstall" in p.stdout and "needs Linux" not in p.stdout),
        (["-c", _NO_ROOM], lambda p: "ulimit -v" in p.stdout and "needs Linux" not in p.stdout),
        ([FAKE_CLI, "50", "5", "-o", f"{d}/a\nb.npz"],
         lambda p: [ln for ln in p.stderr.splitlines() if "saved to" in ln] == [f"saved to {d}/a\\x0ab.npz"]),
    ]
    cases, fails = 0, 0
    for args, ok in checks:
        r.env["CORELAT_FAKE_RESULT"] = lat
        p = r.run(args, python=args[0] in ("-c", FAKE_CLI))
        cases += 1
        fails += not (p is not None and ok(p))
    for value in ("0", "false", "off"):
        env = {**r.env, "CORELAT_DEBUG": value}
        p = subprocess.run([sys.executable, "-c", _A_BUG, lat], capture_output=True, text=True,
                           env=env, timeout=60, check=False)
        cases += 1
        fails += "Traceback" in p.stderr
    env = {**r.env, "CORELAT_TIMER": "x" * 10_000}
    p = subprocess.run([sys.executable, "-m", "corelat", "5", "2"], capture_output=True, text=True, env=env,
                       timeout=60, check=False)
    cases += 1
    fails += len(p.stderr) > 300
    if os.geteuid() == 0 and subprocess.run(["which", "setpriv"], capture_output=True).returncode == 0:
        caps = "+dac_override,+dac_read_search"
        nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", f"--inh-caps={caps}",
                  f"--ambient-caps={caps}"]
        for threads in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            env = {**r.env, threads: "2"}
            p = subprocess.run([*nobody, sys.executable, "-m", "corelat", "report", lat], capture_output=True,
                               text=True, env=env, timeout=60, check=False, preexec_fn=_nproc_one, cwd="/")
            cases += 1
            fails += p.returncode != 0 or "interrupted" in p.stderr
    return cases, fails


_HW, _SIG = pytest.mark.hw, pytest.mark.signals
#: (id, what a case is, its check, its tiers beyond campaign and slow).
CATEGORIES = [
    ("hostile", "hostile .npz files (tests/hostile.py)", hostile_files, ()),
    ("special", "special files as FILE (/dev/zero, urandom, FIFO, links, 8 GiB sparse, folder)",
     special_files, ()),
    ("sysfs", "sysfs dumps linking to /dev/zero, urandom, FIFOs", sysfs_dumps, ()),
    ("saves", "saves: Ctrl-C mid-save, RLIMIT_FSIZE, 64 KB tmpfs, dangling -o link", saves, (_HW, _SIG)),
    ("cpu-lists", "absurd CPU lists (0-5000 ... 0-1000000, range(10**5))", cpu_lists, ()),
    ("messages", "messages: early Ctrl-C, broken pipe, usage, API arguments, threads, ulimit -v", messages,
     (_SIG,)),
    ("stops", "Ctrl-Z then fg: SIGSTOP/SIGTSTP of 2-3 s mid-sweep, cas/rw/oneway/read-modified, 1 s time-out",
     stops, (_HW, _SIG)),
    ("moves", "taskset -a -p during a sweep: the pair re-pinned, measured again and said", moves,
     (_HW, _SIG)),
    ("progress", "progress never goes back (re-tests, sample strategy; fake measurers)", progress, ()),
    ("small-files", "small files, huge memory: 24 KB of `x` lines, a c2clat plot of 40,000 rows, a "
     "40,000-label header with a duplicate, an encrypted member, `fleet-report --expect` of 3,000 x "
     "[0-999999]", small_files, ()),
    ("schema-headers", "crafted header fields of latency, locks, smt, placement, fleet and check files "
     "(load + report)", crafted_headers, ()),
    ("schema-arrays", "crafted arrays (dtype, shape, values) of the same kinds (load + report)",
     crafted_arrays, ()),
    ("stdout", "stdout broken/closed/full/ASCII: -o of measure, --csv, locks, placement (issue 24.1)",
     stdout_losses, ()),
    ("plot-saves", "plot -o over an old image: ulimit -f 2/4/16 KiB, 64 KB tmpfs (24.2)", plot_saves, ()),
    ("links-modes", "a stranger's link in a sticky folder (3), set-id bits of an old file (3) (24.3-4)",
     links_and_modes, ()),
    ("term-saves", "SIGTERM/SIGHUP at 8 points inside a save: .tmp left (24.9)", term_saves, (_SIG,)),
    ("escapes", "ESC/OSC/BEL/CR in fields and file names: report, compare, plot, errors (24.5)", escapes, ()),
    ("cli-messages", "messages: --retest N, compare kinds, no extension, mmap failure, CORELAT_DEBUG=0, long "
     "CORELAT_TIMER, -o name with a newline, OMP_NUM_THREADS=2 under ulimit -u 1 (24.CLI, 12, 13)",
     cli_messages, ()),
]


@pytest.mark.campaign
@pytest.mark.slow
@pytest.mark.parametrize("what, check", [pytest.param(what, check, id=name, marks=marks)
                                         for name, what, check, marks in CATEGORIES])
def test_no_case_fails(what, check, tmp_path):
    r = Runner()
    cases, fails = check(r, str(tmp_path))
    if cases == 0:
        pytest.skip(f"{what}: not possible here (needs root, two CPUs or taskset)")
    assert fails == 0, f"{what}: {fails} of {cases} cases failed; refused by the clean-exit check: {r.bad}"
