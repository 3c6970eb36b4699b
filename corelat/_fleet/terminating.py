"""SIGTERM in a fleet job (scancel, or the launcher passing it on): rank 0 writes what it has."""

import contextlib
import os
import signal
import threading

#: Seconds a rank other than 0 lives on after SIGTERM: the launcher passes SIGTERM to every rank, and
#: a rank that died of it at once made MPICH's mpiexec kill the whole job (rank 0 included) before
#: rank 0 had written its partial report. Rank 0 writes it in about a second and ends the job; Slurm
#: waits 30 s (KillWait) before its SIGKILL.
HOLD_S = 10.0


class _Terminated(BaseException):
    """SIGTERM on rank 0 (scancel, or mpiexec passing it on): not an Exception, so that no handler
    of a node's failure takes it for one."""


@contextlib.contextmanager
def _terminating(rank0):
    """On rank 0 (where it runs the main thread), SIGTERM raises :class:`_Terminated`, so that a
    job ended from outside still writes what it has (:meth:`_Job.terminated`); the other ranks go on
    for at most :data:`HOLD_S` seconds meanwhile, and end with 128 + SIGTERM."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_terminated(signum, frame):
        if _state["fired"]:  # the launcher may pass it on more than once: the first one is handled
            return
        if _state["deferred"]:
            _state["pending"] = True
            return
        _state["fired"] = True
        raise _Terminated()

    _state.update(fired=False, pending=False, deferred=0)
    previous = signal.signal(signal.SIGTERM, raise_terminated if rank0 else _hold)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


_state = {"fired": False, "pending": False, "deferred": 0}


@contextlib.contextmanager
def deferred():
    """SIGTERM's :class:`_Terminated` held until the block is done: a node half added to the fleet
    (its group known, its records not) made the partial report fail with KeyError (2 of 4 tries)."""
    _state["deferred"] += 1
    try:
        yield
    finally:
        _state["deferred"] -= 1
        if not _state["deferred"] and _state["pending"] and not _state["fired"]:
            _state["pending"], _state["fired"] = False, True
            raise _Terminated()


_holding: list = []


def _hold(signum, frame):
    if _holding:
        return
    _holding.append(True)

    def end():
        with contextlib.suppress(OSError):
            os.write(2, b"corelat fleet: ended by SIGTERM\n")
        os._exit(128 + signal.SIGTERM)

    timer = threading.Timer(HOLD_S, end)
    timer.daemon = True
    timer.start()
