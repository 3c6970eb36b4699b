"""Reading a fleet folder's files on worker processes.

A node file's checks and decompression hold the GIL for most of a node's few milliseconds, so
threads read one file at a time however many CPUs there are. For folders of many files,
:func:`read_in_order` reads them on processes (one per usable CPU): each worker returns a file's
small summary (its :class:`~corelat._fleet.nodes.NodeData` or the error text), never a file, and
the caller adds them in the folder's order, as the serial reader does, a bounded number ahead.

Workers ignore SIGINT: Ctrl-C reaches the main process, which cancels what is queued and waits
for the workers to end (each is in the middle of one file at most). A worker that dies (killed,
out of memory) breaks the pool: the files it had in hand become their nodes' errors, and the rest
are read on a new pool (:data:`MAX_RESTARTS` times at most, then serially).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections import deque
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

#: Folders of fewer files are read on threads: a pool's start costs about as much as 200 files.
MIN_FILES = 200
#: New pools after a worker died, before the rest is read in this process.
MAX_RESTARTS = 3


def workers():
    """Worker processes to read on: the CPUs this process may run on (1: read here)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _ignore_sigint():
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _context():
    # Not fork: the caller may hold threads (BLAS, its own); a fork server is started clean and
    # forks each worker with corelat already imported.
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["corelat._fleet.nodes"])
        return ctx
    return multiprocessing.get_context("spawn")


def read_in_order(paths, read, add, died):
    """``add(path, read(path))`` for each path in order, ``read`` run on worker processes;
    ``died(path, why)`` for the files a dead worker had in hand. ``read`` must be a module-level
    function that raises nothing (a file's problem is its result)."""
    todo = deque(paths)
    restarts = 0
    while todo:
        if restarts > MAX_RESTARTS:
            while todo:
                p = todo.popleft()
                add(p, read(p))
            return
        broken = _read_on_pool(todo, read, add, died)
        if not broken:
            return
        restarts += 1


def _read_on_pool(todo, read, add, died):
    """Read ``todo`` (consumed) on one pool; True when a worker died and files remain."""
    n = workers()
    window = deque()
    pool = ProcessPoolExecutor(max_workers=n, mp_context=_context(), initializer=_ignore_sigint)
    try:
        while todo or window:
            while todo and len(window) < 4 * n:
                p = todo.popleft()
                window.append((p, pool.submit(read, p)))
            p, fut = window.popleft()
            try:
                got = fut.result()
            except BrokenProcessPool:
                why = "its reader process died (killed, or out of memory) while the file was read"
                died(p, why)
                for q, _ in window:
                    died(q, why)
                window.clear()
                return bool(todo)
            add(p, got)
        return False
    finally:
        for _, fut in window:
            fut.cancel()
        # Each worker is in one file at most: waiting ends within that file, and no worker outlives
        # the call (Ctrl-C included).
        pool.shutdown(wait=True, cancel_futures=True)
