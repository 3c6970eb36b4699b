"""A process forked while another thread measures can measure too (issue 34, item 22).

A fork copies only the forking thread: a lock another thread held at that moment stays held in the
child for good. Each test runs a fresh Python that forks while a second thread is inside
``corelat.measure``; the child measures a small pair and exits. The fresh Python waits for its child
with a bound and kills it past the bound, so a hang is a failure, not a hung suite."""

import os
import subprocess
import sys
import textwrap

import pytest

CPUS = sorted(os.sched_getaffinity(0))
needs2 = pytest.mark.skipif(len(CPUS) < 2, reason="needs at least 2 allowed CPUs")
CHILD_BOUND_S = 20

# What the fresh Python runs. {first} says what the second thread is doing when the main thread forks.
SCRIPT = """
import importlib.abc, os, sys, threading, time
import corelat

a, b = {a}, {b}
entered = threading.Event()

class SlowImport(importlib.abc.MetaPathFinder):
    # Holds the import of one of measure()'s modules open for a while (the locks of the modules
    # importing it are held meanwhile), so that the fork lands inside the import, as it does by
    # chance when a process forks soon after a thread starts measuring.
    def find_spec(self, name, path=None, target=None):
        if name == "corelat._measure.assemble":
            entered.set()
            time.sleep(1.0)
        return None

if "{first}" == "import":
    sys.meta_path.insert(0, SlowImport())
else:  # the kernels: everything imported and the timer calibrated before the thread starts
    corelat.measure([a, b], round_trips=10, samples=3)
    entered.set()

def work():
    corelat.measure([a, b], round_trips=1000, samples=300 if "{first}" == "kernel" else 3)

t = threading.Thread(target=work)
t.start()
if not entered.wait(30):
    sys.exit("the thread never started measuring")
if "{first}" == "kernel":
    time.sleep(0.3)
pid = os.fork()
if pid == 0:
    try:
        r = corelat.measure([a, b], round_trips=10, samples=3)
        os._exit(0 if r.samples.shape[:2] == (2, 2) else 3)
    except BaseException as e:
        print("child:", type(e).__name__, e, flush=True)
        os._exit(4)
deadline = time.monotonic() + {bound}
while time.monotonic() < deadline:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
    time.sleep(0.05)
else:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    t.join(60)
    sys.exit("the child's measure() hung (killed after {bound} s)")
t.join(60)
sys.exit(0 if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 else f"child ended with status {{status}}")
"""


@pytest.mark.hw
@pytest.mark.signals  # kills the child past the bound
@pytest.mark.slow
@needs2
@pytest.mark.parametrize("first", ["import", "kernel"])
def test_a_child_forked_while_another_thread_measures_can_measure(first):
    code = textwrap.dedent(SCRIPT).format(a=CPUS[0], b=CPUS[1], first=first, bound=CHILD_BOUND_S)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=CHILD_BOUND_S + 90
    )
    assert out.returncode == 0, out.stderr[-2000:] + out.stdout[-2000:]


class _Lock:
    def __init__(self, owner, count):
        self.owner, self.count = owner, count


def test_only_corelat_modules_another_thread_holds_count():
    from corelat._core.forks import importing_elsewhere

    locks = {
        "corelat._measure.sweep": lambda: _Lock(7, 1),
        "corelat._measure.assemble": lambda: _Lock(7, [None]),
        "corelat._system.topology": lambda: _Lock(1, 1),  # this thread's own import: it goes on after
        "corelat._results.load": lambda: _Lock(None, 0),  # free
        "numpy.linalg": lambda: _Lock(7, 1),
        "corelat_other": lambda: _Lock(7, 1),
        "corelat.plot": lambda: None,
    }  # collected
    assert importing_elsewhere(locks, me=1) == ["corelat._measure.assemble", "corelat._measure.sweep"]


def test_the_wait_before_a_fork_is_bounded():
    from corelat._core.forks import wait_for_imports

    now = [0.0]

    def sleep(s):
        now[0] += s

    assert wait_for_imports(5.0, busy=lambda: ["corelat.x"], clock=lambda: now[0], sleep=sleep) == [
        "corelat.x"
    ]
    assert 5.0 <= now[0] < 5.1
    left = iter([["corelat.x"], ["corelat.x"], []])
    assert wait_for_imports(5.0, busy=lambda: next(left), clock=lambda: now[0], sleep=sleep) == []
