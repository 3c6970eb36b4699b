"""The pure-test guard: a test not marked ``hw`` must run no kernel of ``corelat._corelat``. (Tests marked
``vm`` run only inside the emulated machine, where they measure: they are let be too.)

A kernel is an entry point that starts measuring threads pinned to CPUs (:data:`KERNELS`). The guard
covers every phase of such a test (its fixtures' setup, the test, the teardown) in two ways:

* in this process, each kernel entry point of ``corelat._corelat`` is replaced by a stand-in that
  records the call and raises :class:`PureTestRanKernel`, so no thread is started; the module's own
  functions come back after the test. The code under test looks the entry points up on the module
  when it measures (``corelat._core.binding.extension().pingpong``), so it meets the stand-in;
* in subprocesses, ``tests/purecheck`` goes first on ``PYTHONPATH`` and ``CORELAT_TEST_KERNEL_LOG``
  names a log file: a Python started with that environment (``python -m corelat``, ``python -c``;
  not one given an environment built from scratch) logs each kernel call there and runs it as usual
  (see ``tests/purecheck/sitecustomize.py``).

Either way the test fails with ``pure test ran a kernel: NAME; mark it hw``, also when the code under
test swallowed the exception. ``tests/conftest.py`` wires the hooks in.
"""

import importlib
import os
import pathlib
import shutil
import sys
import tempfile

import pytest

LOG_VAR = "CORELAT_TEST_KERNEL_LOG"
PURECHECK = pathlib.Path(__file__).resolve().parent / "purecheck"
#: The entry points of ``corelat._corelat`` that start measuring threads on CPUs.
KERNELS = ("pingpong", "oneway", "chase", "locks", "smt_throughput")
#: Its other functions: no thread of their own, nothing pinned. ``timer_init`` calibrates the timer on
#: the calling thread (about 30 ms) the first time anything asks for ``corelat.timer_info()``.
HELPERS = ("timer_init", "timer_info", "hw_timer", "current_cpu", "ticks", "clock_cost", "jobs_alive",
           # what the lock tests can run here (CPUID, a mutex locked once on the calling thread), and the
           # robust mutex's check (one short unpinned thread that dies holding it): nothing measured
           "lock_availability", "lock_robust_check")
#: A test with one of these markers may run kernels.
ALLOWED = ("hw", "vm")


class PureTestRanKernel(BaseException):
    """A kernel called from a pure test. A BaseException, so that ``except Exception`` in the code
    under test does not turn it into something else."""


def message(names):
    return f"pure test ran a kernel: {', '.join(dict.fromkeys(names))}; mark it hw"


def is_pure(item):
    return not any(item.get_closest_marker(m) for m in ALLOWED)


_found = []  # corelat._corelat once imported, or None where it is not built: looked for once


def _extension():
    """``corelat._corelat``, or None where it is not built."""
    if not _found:
        module = sys.modules.get("corelat._corelat")
        if module is None:
            try:
                module = importlib.import_module("corelat._corelat")
            except ImportError:
                module = None
        _found.append(module)
    return _found[0]


class Guard:
    """Installs and removes the guard around one test, and says which kernels ran meanwhile."""

    def __init__(self, log_dir=None):
        self._own_dir = None if log_dir else tempfile.mkdtemp(prefix="corelat-kernelguard-")
        self.log = os.path.join(log_dir or self._own_dir, "kernels.log")
        self.calls = []
        self._module = None
        self._saved = {}
        self._env = None

    @property
    def installed(self):
        return self._env is not None

    def _refuse(self, name):
        def refused(*args, **kwargs):
            self.calls.append(name)
            raise PureTestRanKernel(message([name]))

        refused.__name__ = refused.__qualname__ = name
        return refused

    def install(self):
        if self.installed:
            return
        self.calls.clear()
        module = _extension()
        if module is not None:
            self._module = module
            self._saved = {n: getattr(module, n) for n in KERNELS if hasattr(module, n)}
            for name in self._saved:
                setattr(module, name, self._refuse(name))
        self._env = {k: os.environ.get(k) for k in (LOG_VAR, "PYTHONPATH")}
        os.makedirs(os.path.dirname(self.log), exist_ok=True)  # in case /tmp was cleaned meanwhile
        with open(self.log, "w"):
            pass
        os.environ[LOG_VAR] = self.log
        path = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = str(PURECHECK) + (os.pathsep + path if path else "")

    def uninstall(self):
        if not self.installed:
            return
        for name, kernel in self._saved.items():
            setattr(self._module, name, kernel)
        self._module, self._saved = None, {}
        for k, v in self._env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        self._env = None

    def close(self):
        self.uninstall()
        if self._own_dir:
            shutil.rmtree(self._own_dir, ignore_errors=True)

    def take(self):
        """The kernels that ran since the last look, each as a phrase; forgets them."""
        ran = list(self.calls)
        self.calls.clear()
        try:
            with open(self.log, encoding="utf-8", errors="replace") as f:
                lines = f.read().splitlines()
            with open(self.log, "w"):
                pass
        except OSError:
            lines = []
        for line in lines:
            name, _, argv = line.partition("\t")
            ran.append(f"{name} (in a subprocess: {argv})")
        return ran


def check(guard, outcome):
    """After a phase of a guarded test: fail it if a kernel ran. A PureTestRanKernel that reached
    pytest keeps its traceback (it shows the call); anything else becomes the guard's message."""
    ran = guard.take()
    if not ran:
        return
    excinfo = outcome.excinfo
    if excinfo is not None and isinstance(excinfo[1], PureTestRanKernel) and len(set(ran)) == 1:
        return
    text = message(ran)
    if excinfo is not None:
        text += f"\n(the test itself ended with {excinfo[0].__name__}: {excinfo[1]})"
    failure = pytest.fail.Exception(text, pytrace=False)
    if hasattr(outcome, "force_exception"):
        outcome.force_exception(failure)
    else:  # pluggy < 1.1
        raise failure


class Plugin:
    """The hooks; registered by ``tests/conftest.py`` as ``corelat-kernelguard`` (``-p
    no:corelat-kernelguard`` turns the guard off, to see what a pure test would do unguarded)."""

    def __init__(self):
        self.guard = Guard()

    def pytest_unconfigure(self, config):
        self.guard.close()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_setup(self, item):
        if is_pure(item):
            self.guard.install()
        outcome = yield
        if self.guard.installed:
            check(self.guard, outcome)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        outcome = yield
        if self.guard.installed:
            check(self.guard, outcome)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(self, item):
        outcome = yield
        if self.guard.installed:
            try:
                check(self.guard, outcome)
            finally:
                self.guard.uninstall()
