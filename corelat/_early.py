"""What the ``corelat`` command needs before anything heavy is imported.

``import corelat`` loads NumPy and the extension, a few tenths of a second in which a Ctrl-C would
print a traceback and an out-of-memory limit (``ulimit -v``) an import traceback. When (and only
when) this process is the ``corelat`` command (the console script or ``python -m corelat``), this
module, imported first by ``corelat/__init__.py``, installs a Ctrl-C handler that ends the command
quietly with status 130, and an excepthook that turns a failure while starting up into one line.
:func:`release` hands Ctrl-C back to Python's KeyboardInterrupt once ``corelat.cli.main`` is ready
to catch it. A program that merely imports corelat is left alone.

Under an address-space limit the command also checks, before NumPy loads, that the limit leaves
room for NumPy: the OpenBLAS that NumPy's wheels bundle allocates a 32 MiB buffer per thread as it
loads and, before OpenBLAS 0.3.30 (NumPy < 2.3, the newest NumPy on Python 3.9 and 3.10), retries a
failed allocation forever (OpenMathLib/OpenBLAS#5289). A limit too small is refused in one line
instead of hanging. The command needs no BLAS threads, so unless the user chose a number it runs
OpenBLAS with one thread: each thread would cost address space, and under ``chrt`` an OpenBLAS thread
spins at the caller's real-time priority, above the measuring threads. A number the user chose is cut
to the threads the limits (``ulimit -u``, pids.max) let start: OpenBLAS raises SIGINT when one fails.

Only modules the interpreter has already loaded are used before the handler is in place (``_signal``
is the C half of ``signal``: importing ``signal`` itself builds enums, long enough for a Ctrl-C to
land in it).
"""

import _signal as signal
import _thread
import atexit
import os
import sys
import time

EXIT_FAILED, EXIT_INTERRUPTED = 1, 130
_COMMAND_MODULES = ("corelat", "corelat.__main__")
MIB = 1 << 20
#: What loading NumPy takes besides its shared libraries: OpenBLAS's buffer per thread, a stack per
#: extra thread, and the Python modules of NumPy and corelat (about 20 MiB on Python 3.9-3.13).
_BLAS_BUFFER, _THREAD_STACK, _MODULES_HEAP = 32 * MIB, 8 * MIB, 24 * MIB
#: NumPy's libraries when they cannot be found (not a wheel: a distribution's NumPy, say).
_UNKNOWN_LIBRARIES = 48 * MIB
_BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")  # OpenBLAS's order


def _read(path, limit=1 << 16):
    # As corelat._core.files reads (not importable yet): a FIFO bind-mounted over a /proc file must
    # neither stall the open nor the read.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if os.fstat(fd).st_mode & 0o170000 != 0o100000:
            raise OSError(f"{path}: not a regular file")
        return os.read(fd, limit)
    finally:
        os.close(fd)


#: Files the C library opens with a blocking open as NumPy loads: OpenBLAS asks for the CPU count
#: (``sysconf(_SC_NPROCESSORS_CONF)``), and glibc 2.35+ reads it from here.
_BLOCKING_READS = ("/sys/devices/system/cpu/possible",)
_S_IFMT, _S_IFIFO, _S_IFCHR = 0o170000, 0o010000, 0o020000


def blocking_kind(path):
    """What ``path`` is where reading it could wait forever (a FIFO, a character device), else None."""
    try:
        mode = os.stat(path).st_mode & _S_IFMT
    except OSError:
        return None  # absent or unreadable: the C library falls back without waiting
    return {_S_IFIFO: "a FIFO (named pipe)", _S_IFCHR: "a character device"}.get(mode)


def check_blocking_reads():
    """Refuse, in one line, a sysfs on which loading NumPy would wait forever."""
    if not sys.platform.startswith("linux"):
        return
    for path in _BLOCKING_READS:
        kind = blocking_kind(path)
        if kind:
            _fail(f"{path} is {kind}, not a regular file: the C library's CPU count, which NumPy asks "
                  "for as it loads, would wait on it forever")


def _interpreter_argv():
    """The interpreter's own command line: ``sys.orig_argv`` (3.10+), else ``/proc/self/cmdline``."""
    orig = getattr(sys, "orig_argv", None)
    if orig is not None:
        return list(orig)
    try:
        raw = _read("/proc/self/cmdline")
    except OSError:
        return []
    return [os.fsdecode(a) for a in raw[:-1].split(b"\0")] if raw.endswith(b"\0") else []


def _runs_module(argv):
    """True when the interpreter command line ``argv`` runs one of :data:`_COMMAND_MODULES` with ``-m``."""
    args = iter(argv[1:])
    for arg in args:
        if arg in ("-W", "-X", "--check-hash-based-pycs"):
            next(args, None)  # the option's value
            continue
        if not arg.startswith("-") or arg in ("-", "--"):
            return False  # a script, or stdin: not -m
        if arg.startswith("--"):
            continue
        for i, letter in enumerate(arg[1:], 1):  # a cluster of one-letter options, as in -Bm corelat
            if letter in "cm":  # both end the options; their value is the rest or the next argument
                return letter == "m" and (arg[i + 1:] or next(args, "")) in _COMMAND_MODULES
            if letter in "WX":
                if not arg[i + 1:]:
                    next(args, None)
                break
    return False


def running_as_command():
    """True when this process is the ``corelat`` console script or ``python -m corelat``."""
    if sys.argv and os.path.basename(sys.argv[0]) in ("corelat", "corelat.exe"):
        return True
    # While `python -m` imports the module it will run, sys.argv[0] is "-m", and then runpy sets it
    # to that module's file (which module, only the interpreter's command line says: sys.orig_argv
    # from 3.10, /proc/self/cmdline on 3.9).
    if not hasattr(sys, "orig_argv") and sys.argv[:1] != ["-m"] and not _our_main(sys.argv[:1]):
        return False
    return _runs_module(_interpreter_argv())


def _our_main(first):
    """True when ``first`` (sys.argv[:1]) names this package's __main__.py, as runpy sets it."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "__main__.py")
    try:
        return bool(first) and os.path.abspath(first[0]) == here
    except (TypeError, ValueError):
        return False


def _interrupted(signum, frame):
    os.write(2, b"corelat: interrupted\n")
    os._exit(EXIT_INTERRUPTED)


def _fail(text):
    try:
        os.write(2, f"corelat: error: cannot start: {text}\n".encode("utf-8", "replace"))
    finally:
        os._exit(EXIT_FAILED)


def debug():
    """CORELAT_DEBUG asks for tracebacks: 1, yes, true, on (not 0, no, false, off or empty)."""
    return os.environ.get("CORELAT_DEBUG", "").strip().lower() not in ("", "0", "no", "false", "off", "n")


def _startup_failed(kind, value, tb):
    if issubclass(kind, KeyboardInterrupt):
        _interrupted(None, None)
    if debug():
        return sys.__excepthook__(kind, value, tb)
    hint = ""
    if issubclass(kind, (MemoryError, ImportError)) or "memory" in str(value).lower():
        hint = (" (out of memory while starting, or a broken install: is the memory limit, ulimit -v, "
                "too low?)")
    why = " ".join(str(value).split())
    _fail(f"{kind.__name__}{': ' + why[:160] if why else ''}{hint}")


def _numpy_libraries():
    """Bytes of the shared libraries ``import numpy`` maps (its core extension, its wheel's libs)."""
    for entry in sys.path:
        package = os.path.join(entry or os.curdir, "numpy")
        if os.path.isfile(os.path.join(package, "__init__.py")):
            break
    else:
        return _UNKNOWN_LIBRARIES
    total = 0
    for folder, prefix in ((package + ".libs", ""), (os.path.join(package, "_core"), "_multiarray_umath"),
                           (os.path.join(package, "core"), "_multiarray_umath")):  # NumPy 2, NumPy 1
        try:
            with os.scandir(folder) as entries:
                total += sum(e.stat().st_size for e in entries
                             if e.name.startswith(prefix) and ".so" in e.name)
        except OSError:
            pass
    return total or _UNKNOWN_LIBRARIES


def _threads_startable(wanted):
    """How many of ``wanted`` more threads this process can start now (``ulimit -u``, pids.max).

    Each probe thread waits on a lock until all are started, so that the count is of threads alive
    at once, as OpenBLAS's are; afterwards the probes are waited for until the kernel has let them go
    (bounded), since a thread still exiting still counts against the limit."""
    gate, started = _thread.allocate_lock(), 0
    try:
        before = len(os.listdir("/proc/self/task"))
    except OSError:
        before = 1
    gate.acquire()
    done = [_thread.allocate_lock() for _ in range(wanted)]

    def probe(lock):
        with gate:
            pass
        lock.release()

    for lock in done:
        lock.acquire()
        try:
            _thread.start_new_thread(probe, (lock,))
        except RuntimeError:  # "can't start new thread": the limit
            lock.release()
            break
        started += 1
    gate.release()
    for lock in done[:started]:
        lock.acquire(timeout=1)
    deadline = time.monotonic() + 0.2
    while started and time.monotonic() < deadline:
        try:
            if len(os.listdir("/proc/self/task")) <= before:
                break
        except OSError:
            break
        time.sleep(0.001)
    return started


def _blas_threads():
    """OpenBLAS's thread count as it will read it; 1 set for it when the user chose none.

    A number the user chose is kept where the limits on threads let OpenBLAS start that many: it
    does not cope with fewer (it raises SIGINT as it loads: the command would say "interrupted"
    before doing anything), so under ``ulimit -u`` or a cgroup's pids.max it gets what can start."""
    if _blas_chosen:
        return _blas_chosen[0]
    _blas_chosen.append(_choose_blas_threads())
    return _blas_chosen[0]


_blas_chosen: list = []


def _choose_blas_threads():
    for name in _BLAS_THREADS:
        try:
            n = int(os.environ.get(name, "0"))
        except ValueError:
            continue
        if n > 0:
            # Not os.cpu_count(): it opens /sys/devices/system/cpu/online blocking (a FIFO: forever).
            n = min(n, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else n)
            if n > 1:
                can = _threads_startable(n - 1) + 1
                if can < n:
                    os.environ["OPENBLAS_NUM_THREADS"] = str(can)
                    n = can
            return n
    os.environ["OPENBLAS_NUM_THREADS"] = "1"  # takes precedence over the other two
    return 1


def check_address_space():
    """Refuse, in one line, an address-space limit (``ulimit -v``) too small to load NumPy."""
    import resource

    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit == resource.RLIM_INFINITY:
        return
    threads = _blas_threads()
    in_use = int(_read("/proc/self/statm").split()[0]) * resource.getpagesize()
    need = (in_use + _numpy_libraries() + threads * _BLAS_BUFFER + (threads - 1) * _THREAD_STACK
            + _MODULES_HEAP)
    if need > limit:
        blas = f" with {threads} OpenBLAS threads" if threads > 1 else ""
        _fail(f"the address-space limit (ulimit -v) of {limit // MIB} MiB is below the {-(-need // MIB)} MiB "
              f"that loading NumPy{blas} takes (with less, NumPy's OpenBLAS can hang); raise the limit")


def install():
    """Quiet Ctrl-C and one-line start-up failures, and OpenBLAS without threads, for the command only."""
    if not running_as_command():
        return
    check_blocking_reads()
    # Under `chrt -f N` every thread of the process starts at the caller's real-time priority, one
    # above the measuring threads (see team.c): OpenBLAS's idle threads spin on the measuring CPUs
    # after NumPy loads (and after any BLAS call) and starve a measuring thread meanwhile. The command
    # computes nothing that needs BLAS threads, so it runs without them unless the user chose a number.
    _blas_threads()
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        try:
            signal.signal(signal.SIGINT, _interrupted)
        except ValueError:  # imported from a thread other than the main one: not the command starting
            return
        sys.excepthook = _startup_failed
        atexit.register(_finishing)
        try:
            check_address_space()
        except (OSError, ValueError, IndexError):
            pass  # /proc unreadable: start as before, without the check


def hold():
    """Ctrl-C ends the command quietly again (status 130, one line) once ``main`` has its status.

    What runs after ``main`` (its output's last flush, the interpreter's exit: the fork server and
    the pools' exit handlers, finalisation) is out of ``main``'s reach: a KeyboardInterrupt there
    killed the command by SIGINT (status -2) without a word."""
    if not running_as_command():
        return
    try:
        signal.signal(signal.SIGINT, _interrupted)
    except ValueError:  # not the main thread: not the command ending
        return
    _held.append(True)


_held: list = []


def _finishing():
    """The last exit handler: Ctrl-C is held off for the interpreter's finalisation.

    Registered as the command starts, so it runs after every other exit handler (the fork server's,
    the pools': those Ctrl-C still ends, with 130). After them Python puts SIGINT back to its
    default action, and the ~0.1 s of finalisation that follows would die by SIGINT: the command has
    its status by then, and a Ctrl-C that lands there leaves it standing."""
    if _held and hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})


def release():
    """Ctrl-C raises KeyboardInterrupt again (``main`` catches it from here on)."""
    if signal.getsignal(signal.SIGINT) is _interrupted:
        try:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        except ValueError:
            pass
    if sys.excepthook is _startup_failed:
        sys.excepthook = sys.__excepthook__


install()
