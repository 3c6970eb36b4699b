"""Reading and writing files without hanging, exhausting memory or losing data.

Reads open the path without blocking (a FIFO never stalls the open), accept regular files only
(``/dev/zero``, ``/dev/urandom``, FIFOs, sockets and folders are refused, also behind a symlink) and
stop at a stated size, reading in chunks so that Ctrl-C is honoured between them.

Writes go to a temporary file beside the target, are flushed to disk, then renamed over the target:
an interrupted or failed write (Ctrl-C, full disk, file size limit) leaves the old file as it was and
no temporary file behind, also when ended by SIGTERM or SIGHUP. A symlink as target is followed: its
target is replaced, never the link; not one that another user planted in a world-writable sticky
folder (refused, as the kernel's ``protected_symlinks`` would). A new file gets the umask's mode, a
replaced one keeps its permission bits but never set-user-ID, set-group-ID or sticky.
Every error names the path.
"""

import contextlib
import errno
import os
import signal
import stat
import tempfile
import threading

from corelat._core.errors import SaveError

#: sysfs attribute files hold at most one page; larger means it is not one (a link to /dev/zero...).
MAX_SYSFS_BYTES = 64 * 1024
#: ``/proc/cpuinfo`` of a 1024-CPU machine is about 1.5 MB; ``/proc/stat`` is smaller.
MAX_PROC_BYTES = 16 * 1024 * 1024
#: A text latency matrix (CSV, c2clat table): a 4096-CPU matrix is about 150 MB.
MAX_TEXT_BYTES = 256 * 1024 * 1024
#: A corelat ``.npz`` file on disk (its arrays' uncompressed size has its own limit, see _schema).
MAX_NPZ_BYTES = 4 * 1024 * 1024 * 1024

_CHUNK = 1 << 20
_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
)


class Refused(OSError):
    """A file that is not read: not a regular file, or larger than the limit for its kind."""


def _size_text(n):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n} bytes"


def _kind(mode):
    return next((what for test, what in _KINDS if test(mode)), "not a regular file")


def open_regular(path, limit):
    """Open ``path`` for reading as a binary file object, if it is a regular file of at most ``limit``
    bytes. Raises :class:`Refused` (an ``OSError``) otherwise, or the ``OSError`` of the open."""
    # O_NONBLOCK: opening a FIFO for reading would wait for a writer; we refuse it after fstat.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Refused(errno.EINVAL, f"{_kind(st.st_mode)}, not a regular file", path)
        if st.st_size > limit:
            raise Refused(errno.EFBIG, f"{_size_text(st.st_size)}, larger than the {_size_text(limit)} "
                                       "allowed for this kind of file", path)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path, limit):
    """The contents of the regular file ``path``, at most ``limit`` bytes (else :class:`Refused`).

    Reads in chunks, so a Ctrl-C (KeyboardInterrupt) is raised between them, and stops one byte past
    the limit: files whose size says 0 (``/proc``) or that grow while read are bounded too.
    """
    with open_regular(path, limit) as f:
        parts, total = [], 0
        while True:
            chunk = f.read(min(_CHUNK, limit + 1 - total))
            if not chunk:
                return b"".join(parts)
            parts.append(chunk)
            total += len(chunk)
            if total > limit:
                raise Refused(errno.EFBIG, f"larger than the {_size_text(limit)} allowed for this kind "
                                           "of file", path)


# -- writing ------------------------------------------------------------------------------------
#: Symlinks followed before a save gives up, as the kernel's ELOOP limit.
_MAX_LINKS = 40


def _check_link(link, st):
    """Refuse, as the kernel's ``fs.protected_symlinks`` does, to follow a symlink that another user
    planted in a world-writable sticky folder (``/tmp``): a save must not replace their pick of file."""
    folder = os.path.dirname(link) or os.curdir
    try:
        fst = os.stat(folder)
    except OSError:
        return
    shared = fst.st_mode & stat.S_ISVTX and fst.st_mode & stat.S_IWOTH
    if shared and st.st_uid not in (os.geteuid(), fst.st_uid):
        raise SaveError(errno.EPERM, f"a symbolic link of another user (uid {st.st_uid}) in the "
                                     f"world-writable folder {folder}: not written through (remove it, or "
                                     "save elsewhere)", link)


def write_target(path):
    """Where writing ``path`` really goes: symlinks followed (a dangling one to the file it names).

    The links of the last component are followed here, one at a time, each checked by
    :func:`_check_link`; the folders are left to the kernel to resolve (with its protections) when
    the file is made. Raises ``OSError`` naming ``path`` when the name is empty, names an existing
    file that is not a regular one (a folder, ``/dev/null``, a FIFO: renaming over those would
    replace them), or a symlink that :func:`_check_link` refuses.
    """
    path = os.fspath(path)
    if not path:
        raise SaveError(errno.ENOENT, "empty file name", path)
    target = path
    for _ in range(_MAX_LINKS):
        try:
            st = os.lstat(target)
        except FileNotFoundError:
            return target
        except OSError as e:
            raise SaveError(e.errno, e.strerror, path) from None
        if not stat.S_ISLNK(st.st_mode):
            break
        _check_link(target, st)
        target = os.path.join(os.path.dirname(target), os.readlink(target))
    else:
        raise SaveError(errno.ELOOP, "too many levels of symbolic links", path)
    if not stat.S_ISREG(st.st_mode):
        raise SaveError(errno.EISDIR if stat.S_ISDIR(st.st_mode) else errno.EINVAL,
                        f"{_kind(st.st_mode)}, not a regular file", path)
    return target


def _temp_beside(target, path):
    folder = os.path.dirname(target) or os.curdir
    try:
        return tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=folder)
    except OSError as e:
        raise SaveError(e.errno, f"{e.strerror} (a temporary file is made in {folder} first)", path) from None


def check_writable(path):
    """Fail now, not after a long measurement, if ``path`` could not be written atomically.

    Touches nothing of the target: it makes (and removes) a temporary file beside it.
    """
    target = write_target(path)
    fd, tmp = _temp_beside(target, path)
    os.close(fd)
    os.unlink(tmp)
    return target


def _new_file_mode():
    # What open() would give a new file: 0666 less the umask. /proc says the umask without setting it
    # (os.umask can only be read by changing it, which races with other threads).
    try:
        for line in read_bytes("/proc/self/status", 1 << 16).decode("ascii").splitlines():
            if line.startswith("Umask:"):
                return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):  # UnicodeDecodeError is a ValueError
        pass
    return 0o644


class _Ended(BaseException):
    """A termination signal that arrived while a temporary file existed (see :func:`_ending_cleans_up`)."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


#: The termination signals that arrived inside :func:`_ending_cleans_up`, in order. The handler's
#: exception can be lost (raised inside a finaliser, which Python prints and ignores), the record not.
_arrived: list[int] = []


def _raise_ended(signum, frame):
    _arrived.append(signum)
    raise _Ended(signum)


@contextlib.contextmanager
def _ending_cleans_up():
    """While the block runs, SIGTERM and SIGHUP (when nothing else handles them) raise, so that the
    temporary file is removed; the signal is then delivered again and ends the process as it would
    have. Only the main thread can set handlers: elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    taken = {}
    del _arrived[:]
    try:
        for signum in (signal.SIGTERM, signal.SIGHUP):
            if signal.getsignal(signum) == signal.SIG_DFL:
                taken[signum] = signal.signal(signum, _raise_ended)
        yield
    except _Ended:
        pass  # _arrived has it: delivered again below, once the default action is back
    finally:
        _restore(taken)
    if _arrived:  # never reached when the signal was delivered again: the default action ended us
        raise _Ended(_arrived[0])  # blocked by the caller (pthread_sigmask): still end the save


def _restore(taken):
    """Put the handlers back with the signals blocked, then deliver the first that arrived.

    Blocked, a signal cannot slip in between Python's check for pending signals and the change of
    handler (it would be dropped with the default handler back); one pending before the block is
    run by that check (``signal.signal`` runs pending handlers first) and recorded."""
    if not taken:
        return
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, list(taken))
    try:
        for signum, old in taken.items():
            while True:
                try:
                    signal.signal(signum, old)
                    break
                except _Ended:
                    continue  # a pending one ran first: recorded; put the handler back all the same
        if _arrived:
            os.kill(os.getpid(), _arrived[0])  # pending until the mask is restored
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)


def atomic_write(path, write):
    """Write ``path`` by calling ``write(binary_file)`` on a temporary file, then renaming it over.

    On any failure or interrupt (also SIGTERM and SIGHUP) the temporary file is removed and ``path``
    is left untouched; ``OSError`` from the write names ``path``. An existing file keeps its
    permission bits, less set-user-ID, set-group-ID and sticky: the new file is the writer's, not the
    old owner's, and a set-id program of theirs must not become one of ours.
    """
    path = os.fspath(path)
    target = write_target(path)
    with _ending_cleans_up():
        _write_beside(target, path, write)
    try:  # make the rename itself durable; not all filesystems allow syncing a folder
        dfd = os.open(os.path.dirname(target) or os.curdir, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


#: Mode bits a replaced file does not pass on: set-user-ID, set-group-ID, and sticky (which means
#: nothing on a Linux file, and that nothing corelat writes asks for).
_NOT_KEPT = stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX


def _write_beside(target, path, write):
    fd, tmp = _temp_beside(target, path)
    try:
        try:
            mode = stat.S_IMODE(os.stat(target).st_mode) & ~_NOT_KEPT
        except FileNotFoundError:
            mode = _new_file_mode()
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, OSError) and not isinstance(e, Refused):
            raise SaveError(e.errno, e.strerror or str(e), path) from None
        raise
