"""Reading a fleet folder's files on worker processes.

A node file's checks and decompression hold the GIL for most of a node's few milliseconds, so
threads read one file at a time however many CPUs there are. For folders of many files,
:func:`read_in_order` reads them on processes (one per usable CPU): each worker returns a file's
small summary (its :class:`~corelat._fleet.nodes.NodeData` or the error text), never a file, and
the caller adds them in the folder's order, as the serial reader does, a bounded number ahead.

Workers ignore SIGINT: Ctrl-C reaches the main process, which cancels what is queued and waits
for the workers to end (each is in the middle of one file at most). While the workers read, the main
process only notes a Ctrl-C (:class:`_CtrlC`) and raises KeyboardInterrupt itself between two
results, at most :data:`_POLL_S` later. A worker that dies (killed,
out of memory) breaks the pool: the files it had in hand become their nodes' errors, and the rest
are read on a new pool (:data:`MAX_RESTARTS` times at most, then serially).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from collections import deque
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FuturesTimeout
from concurrent.futures.process import BrokenProcessPool

from corelat._system import sysinfo as _sysinfo

#: Folders of fewer files are read on threads: a pool's start costs about as much as 200 files.
MIN_FILES = 200
#: New pools after a worker died, before the rest is read in this process.
MAX_RESTARTS = 3


def workers():
    """Worker processes to read on: the CPUs this process may run on (1: read here). Not
    ``os.cpu_count()``: the C library opens sysfs's ``cpu/online`` blocking (a FIFO: forever)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return _sysinfo.cpu_count() or 1


#: Threads reading a folder of fewer files.
THREADS = min(4, workers())


def read_on_threads(paths, read, add):
    """``add(path, read(path))`` for each path in order, ``read`` run on a few threads a few files
    ahead (zlib and numpy let go of the GIL)."""
    window = deque()
    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        for p in paths:
            window.append((p, pool.submit(read, p)))
            if len(window) > 2 * THREADS:
                q, fut = window.popleft()
                add(q, fut.result())
        while window:
            q, fut = window.popleft()
            add(q, fut.result())


def _ignore_sigint():
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _context():
    # Not fork: the caller may hold threads (BLAS, its own); a fork server is started clean and
    # forks each worker with corelat already imported.
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["corelat._fleet.nodes"])
        _start_forkserver()
        return ctx
    return multiprocessing.get_context("spawn")


def _start_forkserver():
    """Start the fork server with SIGINT blocked, as multiprocessing starts its resource tracker.

    A terminal's Ctrl-C reaches the whole process group. The fork server ignores SIGINT only once
    its preload is imported, so one that came earlier killed it with a traceback of its own, and
    this process read "EOFError: unexpected EOF" from it (exit 1, not 130). The mask a child is
    started with lasts: the server, and each worker it forks, never sees SIGINT; here it waits
    until the mask is put back and is then handled as any other Ctrl-C. The resource tracker is
    started first: starting it unblocks SIGINT, whatever the mask was."""
    from multiprocessing import forkserver, resource_tracker

    resource_tracker.ensure_running()
    block = hasattr(signal, "pthread_sigmask")
    if block:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        forkserver.ensure_running()
    finally:
        if block:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)


class _CtrlC:
    """Ctrl-C noted, not raised, while the workers read; :meth:`check` raises it where this module
    chooses. Python raises KeyboardInterrupt wherever the main thread happens to be, and some of
    those places swallow it. Inside a weakref callback of the import system it was "Exception
    ignored", and the read went on (exit 3 after a Ctrl-C). Other runs ended killed by SIGINT,
    not with exit 130. That was 3 runs in 10 of a Ctrl-C under load. Only the main thread may set a
    handler; elsewhere, or under a handler of the caller's own, nothing changes."""

    _NONE = object()

    def __init__(self):
        self.hit, self.old = False, self._NONE

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            old = signal.getsignal(signal.SIGINT)
            if old is signal.default_int_handler:  # the user's own handler is left alone
                signal.signal(signal.SIGINT, self._note)
                self.old = old
        return self

    def _note(self, signum, frame):
        self.hit = True

    def check(self):
        if self.hit:
            raise KeyboardInterrupt

    def __exit__(self, kind, value, tb):
        if self.old is not self._NONE:
            signal.signal(signal.SIGINT, self.old)
        if self.hit and kind is None:
            raise KeyboardInterrupt


def read_in_order(paths, read, add, died):
    """``add(path, read(path))`` for each path in order, ``read`` run on worker processes;
    ``died(path, why)`` for the files a dead worker had in hand. ``read`` must be a module-level
    function that raises nothing (a file's problem is its result). A Ctrl-C in the main thread
    ends it with KeyboardInterrupt within :data:`_POLL_S` of a result, no worker left."""
    todo = deque(paths)
    restarts = 0
    with _CtrlC() as ctrl_c:
        while todo:
            if restarts > MAX_RESTARTS:
                while todo:
                    ctrl_c.check()
                    p = todo.popleft()
                    add(p, read(p))
                return
            broken = _read_on_pool(todo, read, add, died, ctrl_c)
            if not broken:
                return
            restarts += 1


def _read_on_pool(todo, read, add, died, ctrl_c):
    """Read ``todo`` (consumed) on one pool; True when a worker died and files remain."""
    n = workers()
    window = deque()
    pool = ProcessPoolExecutor(max_workers=n, mp_context=_context(), initializer=_ignore_sigint)
    try:
        while todo or window:
            ctrl_c.check()
            while todo and len(window) < 4 * n:
                fut = pool.submit(read, todo[0])  # BrokenProcessPool once a worker has died
                window.append((todo.popleft(), fut))
            p, fut = window[0]
            got = _result(fut, pool, ctrl_c)
            window.popleft()
            add(p, got)
        return False
    except BrokenProcessPool:
        why = "its reader process died (killed, or out of memory) while the file was read"
        for q, _ in window:
            died(q, why)
        window.clear()
        return bool(todo)
    finally:
        for _, fut in window:
            fut.cancel()
        if _dead(pool):
            _end_broken(pool)
        else:
            # Each worker is in one file at most: waiting ends within that file, and no worker
            # outlives the call (Ctrl-C included).
            pool.shutdown(wait=True, cancel_futures=True)


def _processes(pool):
    return list((getattr(pool, "_processes", None) or {}).values())


def _dead(pool):
    return any(proc.exitcode is not None for proc in _processes(pool))


def _end_broken(pool):
    """End a pool one of whose workers died. The others may wait on a queue lock the dead one held,
    and the pool's own thread on the rest of a result the dead one was writing: the workers are
    killed, and the result pipe's last writer (this process) is closed, so that its reader ends."""
    for proc in _processes(pool):
        proc.kill()
    for proc in _processes(pool):
        proc.join(5)
    queue = getattr(pool, "_result_queue", None)
    writer = getattr(queue, "_writer", None)
    if writer is not None:
        writer.close()
    pool.shutdown(wait=True, cancel_futures=True)


def _result(fut, pool, ctrl_c):
    """``fut.result()``, or BrokenProcessPool when a worker has died: the pool notices a killed
    worker by itself, but not always (a worker killed while it held the task queue's lock leaves
    the others, and the result, waiting for ever). KeyboardInterrupt after a Ctrl-C."""
    while True:
        try:
            return fut.result(timeout=_POLL_S)
        except FuturesTimeout:
            ctrl_c.check()
            if _dead(pool):
                raise BrokenProcessPool("a reader process died") from None


#: How long a wait for one result lasts before the checks (a dead worker, a Ctrl-C) run.
_POLL_S = 0.1
