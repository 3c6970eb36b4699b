"""SIGTERM in a fleet job (scancel, or the launcher passing it on): rank 0 writes what it has."""

import contextlib
import signal
import threading


class _Terminated(BaseException):
    """SIGTERM on rank 0 (scancel, or mpiexec passing it on): not an Exception, so that no handler
    of a node's failure takes it for one."""


@contextlib.contextmanager
def _terminating(rank0):
    """On rank 0 (where it runs the main thread), SIGTERM raises :class:`_Terminated`, so that a
    job ended from outside still writes what it has (:meth:`_Job.terminated`)."""
    if not rank0 or threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_terminated(signum, frame):
        raise _Terminated()

    previous = signal.signal(signal.SIGTERM, raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
