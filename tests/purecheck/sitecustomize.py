"""The pure-test guard's half in subprocesses (see ``tests/kernelguard.py``).

``tests/conftest.py`` puts this folder first on ``PYTHONPATH`` and sets ``CORELAT_TEST_KERNEL_LOG`` for
the tests marked neither ``hw`` nor ``vm``; a Python started from such a test (``python -m corelat``,
``python -c``, an MPI rank, a notebook kernel) imports this file at startup. When ``corelat._corelat``
is then imported, its kernel entry points are wrapped so that every call appends a line
``NAME<TAB>ARGV`` to that log and then runs the kernel as usual: the subprocess behaves exactly as it
would unguarded, and the test is failed afterwards from the log. Nothing else changes: ``sys.argv``,
``sys.path`` beyond this folder, and the module's other attributes are left alone.

This file shadows any other ``sitecustomize`` (Debian's python3 has one), so it runs the next one on
``sys.path`` itself. It must never break the interpreter it runs in: every step is guarded.
"""

import contextlib
import os
import sys

_LOG_VAR = "CORELAT_TEST_KERNEL_LOG"
_MODULE = "corelat._corelat"
#: The entry points that start measuring threads on CPUs (csrc/module.c's method table); the others
#: (timer_init, timer_info, hw_timer, current_cpu, ticks, clock_cost, jobs_alive) are helpers.
KERNELS = ("pingpong", "oneway", "chase", "locks", "smt_throughput")
_HERE = os.path.dirname(os.path.abspath(__file__))


def _chain():
    """Run the ``sitecustomize`` this one shadows (the next on ``sys.path``), if there is one."""
    import importlib.machinery
    import importlib.util

    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


def _logging(name, kernel, log):
    def logged(*args, **kwargs):
        with contextlib.suppress(Exception):  # the log is the test's business, never the command's
            line = "{}\t{}\n".format(name, " ".join(sys.argv).replace("\n", " ")[:500])
            fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line.encode("utf-8", "replace"))
            finally:
                os.close(fd)
        return kernel(*args, **kwargs)

    logged.__name__ = logged.__qualname__ = name
    logged.__doc__ = getattr(kernel, "__doc__", None)
    logged.__wrapped__ = kernel
    return logged


def _wrap(module, log):
    for name in KERNELS:
        kernel = getattr(module, name, None)
        if kernel is not None and getattr(kernel, "__wrapped__", None) is None:
            setattr(module, name, _logging(name, kernel, log))


class _Finder:
    """A meta path finder that finds nothing itself: for ``corelat._corelat`` it asks the others for
    the spec and makes that spec's loader wrap the kernels once the module has executed."""

    def __init__(self, log):
        self.log = log

    def find_spec(self, fullname, path=None, target=None):
        if fullname != _MODULE:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        execute = getattr(loader, "exec_module", None)
        if execute is None:
            return spec
        log = self.log

        def exec_module(module):
            execute(module)
            with contextlib.suppress(Exception):
                _wrap(module, log)

        with contextlib.suppress(Exception):
            loader.exec_module = exec_module  # this loader instance only: spec.loader stays the same object
        return spec


def _install():
    log = os.environ.get(_LOG_VAR)
    if not log:
        return
    module = sys.modules.get(_MODULE)
    if module is not None:
        _wrap(module, log)
    else:
        sys.meta_path.insert(0, _Finder(log))


with contextlib.suppress(Exception):
    _install()
with contextlib.suppress(Exception):
    _chain()
