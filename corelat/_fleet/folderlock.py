"""The fleet job's hold on its output folder: one job writes a folder at a time."""

import contextlib
import errno
import fcntl
import os
import socket
import time

LOCK_NAME = ".corelat-fleet.lock"


def take(directory):
    """Take ``directory`` for this job (rank 0, held until the job ends): (the lock's file
    descriptor, None), or (None, why not). Two jobs writing one folder would mix or overwrite each
    other's files without a word."""
    path = os.path.join(directory, LOCK_NAME)
    for _ in range(5):  # the holder removes the file as it lets go: lock the file that is there
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as e:
            return None, f"-o {directory}: cannot make its lock file {LOCK_NAME}: {e.strerror or e}"
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            holder = ""
            with contextlib.suppress(OSError, ValueError):
                holder = os.pread(fd, 4096, 0).decode("utf-8", "replace").strip()
            os.close(fd)
            if e.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                return None, f"-o {directory}: cannot lock the folder ({e.strerror or e})"
            return None, (f"-o {directory}: the folder is in use by another corelat fleet job"
                          + (f" ({holder})" if holder else "") + "; two jobs in one folder would mix or "
                          "overwrite each other's files: wait for that job to end, or give another folder")
        try:
            here = os.stat(path)
            if os.path.samestat(here, os.fstat(fd)):
                break
        except OSError:
            pass
        os.close(fd)
    else:
        return None, f"-o {directory}: cannot lock the folder (its lock file {LOCK_NAME} keeps changing)"
    with contextlib.suppress(OSError):
        started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        job = os.environ.get("SLURM_JOB_ID")
        text = (f"host {socket.gethostname()}, pid {os.getpid()}" + (f", Slurm job {job}" if job else "")
                + f", since {started}")
        os.ftruncate(fd, 0)
        os.pwrite(fd, text.encode(), 0)
    return fd, None


def release(directory, fd):
    """Let go of the folder (the job is over on this rank): the lock file goes, then the lock."""
    if fd is not None:
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(directory, LOCK_NAME))
        os.close(fd)
