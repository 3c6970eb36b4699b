"""The measuring core's status codes (``csrc/spin.h``) as Python exceptions with plain words.

Threads carry a status code, the CPU concerned and an errno-like detail out of C; the binding
calls :func:`exception` with the GIL held and raises what it returns. Every message names the
CPUs and what to do about it. The codes themselves come from the extension (``STATUS_CODES``,
the names of ``enum corelat_status`` indexed by code), read on first use, so this module imports
where the extension is not built and never holds a copy of the numbers that could drift.
"""

from __future__ import annotations

import functools
import os
import resource

from corelat._core import files as _files
from corelat._core.binding import extension
from corelat._core.errors import MeasurementError, MeasurementTimeout


@functools.cache
def codes():
    """``{name: code}`` for every status of ``enum corelat_status`` (``"OK"``, ``"ETIMEOUT"``, ...)."""
    return {name: code for code, name in enumerate(extension().STATUS_CODES)}


class ThreadMoved(MeasurementError):
    """A pinned thread found itself on another CPU: the affinity or cpuset changed under the
    measurement. ``cpu`` is where it was pinned, ``now_on`` where it ran (-1 if unknown)."""

    def __init__(self, message, cpu, now_on):
        super().__init__(message)
        self.cpu, self.now_on = cpu, now_on


def once_more_if_moved(call, what, moves=None):
    """Run ``call()``; if a thread was moved off its CPU, re-pin (a new call pins new threads) and
    retry once; if that fails too, say plainly that the affinity changed under the measurement.
    ``what`` names the CPUs (``"CPUs 0 and 1"``); each move is appended to the list ``moves`` (if
    given) as ``(the CPU the thread was pinned to, the CPU it ran on)``, so the caller can say so."""
    try:
        return call()
    except ThreadMoved as first:
        if moves is not None:
            moves.append((first.cpu, first.now_on))
        try:
            return call()
        except MeasurementError as again:
            raise MeasurementError(
                f"{what}: the CPU affinity changed during the measurement and measuring again failed: "
                f"{again} (first: {first})") from again


def _errno_text(err):
    return f"{os.strerror(err)} [errno {err}]" if err > 0 else "no detail"


def _timeout(what, cpu, err, secs, grace, waited_for):
    return MeasurementTimeout(
        f"{what}: {waited_for} within {secs} s (the thread on CPU {cpu} gave up waiting; is the machine "
        "overloaded, or the partner's CPU busy with something else?)")


def _no_answer(what, cpu, err, secs, grace, waited_for):
    return MeasurementTimeout(
        f"{what}: the thread on CPU {cpu} stopped running and did not answer within {secs} s + {grace:.3g} s "
        "(frozen by a cgroup freezer, stopped, or starved by a real-time task?); it was left behind and "
        "stops as soon as it runs again")


def _moved(what, cpu, err, secs, grace, waited_for):
    where = f"CPU {err}" if err >= 0 else "another CPU"
    return ThreadMoved(
        f"{what}: the thread pinned to CPU {cpu} ran on {where}: the affinity changed under the measurement "
        "(taskset -p, a cgroup cpuset, or a CPU taken offline)", cpu, err)


def _not_pinned(what, cpu, err, secs, grace, waited_for):
    hint = ""
    try:
        allowed = sorted(os.sched_getaffinity(0))
    except OSError:
        allowed = None
    if allowed is not None and cpu not in allowed:
        hint = (f"; CPU {cpu} is no longer among the CPUs this process may use "
                f"({','.join(map(str, allowed))}): the affinity changed during the measurement "
                "(taskset -p, a cgroup cpuset, or a CPU taken offline)")
    return MeasurementError(
        f"{what}: cannot pin a thread to CPU {cpu} (sched_setaffinity: {_errno_text(err)}){hint}")


def _address_space_short():
    """The address-space limit (``ulimit -v``) in MiB when it leaves too little for one more thread's
    stack (pthread_create then fails with EAGAIN too, as for a limit on threads), else None."""

    try:
        limit = resource.getrlimit(resource.RLIMIT_AS)[0]
        stack = resource.getrlimit(resource.RLIMIT_STACK)[0]
        in_use = int(_files.read_bytes("/proc/self/statm", 1 << 12).split()[0]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        return None
    if limit == resource.RLIM_INFINITY:
        return None
    stack = 8 << 20 if stack == resource.RLIM_INFINITY else stack
    return limit >> 20 if in_use + 2 * stack > limit else None


def _no_thread(what, cpu, err, secs, grace, waited_for):
    hint = ""
    short = _address_space_short() if err == 11 else None
    if short is not None:
        hint = (f"; the address-space limit (ulimit -v) of {short} MiB leaves no room for a thread's stack: "
                "raise the limit")
    elif err == 11:  # EAGAIN
        hint = ("; the process ran out of threads: see `ulimit -u` (RLIMIT_NPROC), the cgroup's pids.max "
                "and /proc/sys/kernel/threads-max")
    return MeasurementError(
        f"{what}: cannot create the measuring thread for CPU {cpu} "
        f"(pthread_create: {_errno_text(err)}){hint}")


def _no_memory(what, cpu, err, secs, grace, waited_for):
    return MeasurementError(
        f"{what}: out of memory for the thread on CPU {cpu} "
        f"(mmap or pthread init: {_errno_text(err or 12)}); free memory or measure fewer CPUs at once")


def _aborted(what, cpu, err, secs, grace, waited_for):
    return MeasurementError(f"{what}: measurement aborted")


def _invalid(what, cpu, err, secs, grace, waited_for):
    if err:
        return MeasurementError(f"{what} on CPU {cpu}: a call failed ({_errno_text(err)})")
    return ValueError(f"{what}: invalid arguments")


# Every name of enum corelat_status (tests/test_status_codes.py checks it against the extension's),
# with the exception a job that ended with it raises. None: not a failure (OK; ESTOP, a budget that
# ran out, is turned into OK in C), so never raised; the generic message if it ever were.
EXCEPTIONS = {
    "OK": None,
    "ETIMEOUT": _timeout,
    "EABORT": _aborted,
    "ENOMEM": _no_memory,
    "ETHREAD": _no_thread,
    "EPIN": _not_pinned,
    "EINVAL": _invalid,
    "EMOVED": _moved,
    "ENOANSWER": _no_answer,
    "ESTOP": None,
}


def exception(what, code, cpu, err, timeout, grace, waited_for):
    """The exception for a failed job: ``what`` names the pair or test, ``cpu`` the thread's CPU,
    ``err`` the errno (or, for a moved thread, the CPU it ran on)."""
    names = {c: name for name, c in codes().items()}
    make = EXCEPTIONS.get(names.get(code, ""))
    if make is None:
        return MeasurementError(f"{what}: measurement failed (status {code})")
    return make(what, cpu, err, f"{timeout:.3g}", grace, waited_for)
