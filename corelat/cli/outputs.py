"""What the command writes: its files (data first, then reports) and its text (printable only).

Files come before text: a measurement of minutes is saved before a single line is printed, so a
reader of stdout that goes away (``| head -1``, ``| true``), a closed stdout (``>&-``), stdout on a
full disk or in an encoding without ``×`` never costs the ``-o`` file. A data file that cannot be
saved does not cost the text either: the text is printed, then the error said.

Text reaches the terminal through :class:`Printable` streams only (installed by ``main`` for the
command's duration): control characters other than newline and tab, which a crafted CPU model, host
name or file name could carry, are written as escapes, and characters the stream's encoding lacks as
backslash escapes instead of failing.
"""

import argparse
import contextlib
import errno
import importlib
import io
import os
import sys

from corelat._core import files as _files
from corelat._core.errors import InputError
from corelat._core.extras import require
from corelat._core.text import printable


#: Files that hold the result itself (``corelat.load`` reads them back).
DATA_SUFFIXES = (".npz", ".csv")
#: Files that show it: written by ``corelat._report.write_report`` after the data files.
REPORT_SUFFIXES = (".html", ".pdf")
_NO_LAYOUT: frozenset[str] = frozenset()


def message(e):
    """One line for an exception, naming the file for OSErrors that have one."""
    if isinstance(e, OSError) and e.filename is not None:
        return f"{shown(e.filename)}: {e.strerror or e}"
    if isinstance(e, OSError) and e.errno == errno.EAGAIN:
        return (f"{e.strerror or e}: cannot start a thread (the limit on threads or processes is reached: "
                "ulimit -u, or the cgroup's pids.max)")
    return " ".join(str(e).split()) or type(e).__name__


def shown(name):
    """A file name for a one-line message: every control character escaped, newlines too."""
    return printable(os.fsdecode(name), keep=_NO_LAYOUT)


class StreamError(OSError):
    """Writing the command's stdout (or stderr) failed: the message names the stream, not a file."""


class Printable(io.TextIOBase):
    """A text stream that writes only printable characters (see :func:`corelat._core.text.printable`)
    to ``stream``, in its encoding with backslash escapes for what the encoding lacks.

    ``stream`` None (the descriptor was closed, ``>&-``) discards the text and remembers that it did.
    Errors of the stream become :class:`StreamError` naming ``name``; with ``quiet`` (stderr, where
    the messages about errors go) they are dropped: there is nowhere left to say them.
    """

    def __init__(self, stream, name, *, quiet=False):
        super().__init__()
        self.unfiltered, self.name, self.quiet, self.discarded = stream, name, quiet, False

    def __del__(self):
        # Finalising closes, and closing flushes: by then the command has ended and its stream may be
        # closed (a test's capture, a library's replaced stdout). Nothing is left to report that to.
        self.quiet = True
        with contextlib.suppress(Exception):
            super().__del__()

    @property
    def encoding(self):
        return getattr(self.unfiltered, "encoding", None) or "utf-8"

    def writable(self):
        return True

    def isatty(self):
        try:
            return bool(self.unfiltered.isatty())
        except (AttributeError, ValueError, OSError):
            return False

    def fileno(self):
        if self.unfiltered is None:
            raise io.UnsupportedOperation(f"{self.name} is closed")
        return self.unfiltered.fileno()

    def write(self, text):
        text = printable(text)
        if self.unfiltered is None:
            self.discarded = self.discarded or bool(text)
            return len(text)
        with self._errors():
            try:
                self.unfiltered.write(text)
            except UnicodeEncodeError:
                encoding = self.encoding
                self.unfiltered.write(text.encode(encoding, "backslashreplace").decode(encoding))
        return len(text)

    def flush(self):
        if self.unfiltered is not None:
            with self._errors():
                self.unfiltered.flush()

    @contextlib.contextmanager
    def _errors(self):
        try:
            yield
        except BrokenPipeError:
            if not self.quiet:
                raise
        except (OSError, ValueError) as e:  # ValueError: the stream was closed under us
            if not self.quiet:
                raise StreamError(getattr(e, "errno", None), getattr(e, "strerror", None) or str(e),
                                  self.name) from None


def _occupy(fd):
    # A descriptor closed at start (`>&-`) would be reused by the next open: a result file could then
    # receive what a library writes to "stdout". Keep it taken by /dev/null meanwhile.
    try:
        os.fstat(fd)
        return
    except OSError:
        pass
    with contextlib.suppress(OSError):
        null = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
        if null != fd:
            os.dup2(null, fd, inheritable=False)
            os.close(null)


@contextlib.contextmanager
def printable_streams():
    """``sys.stdout`` and ``sys.stderr`` as :class:`Printable` streams while the command runs."""
    saved = sys.stdout, sys.stderr
    for fd, stream in ((1, sys.stdout), (2, sys.stderr)):
        if stream is None:
            _occupy(fd)
    sys.stdout = Printable(sys.stdout, "standard output")
    sys.stderr = Printable(sys.stderr, "standard error", quiet=True)
    try:
        yield sys.stdout
    finally:
        sys.stdout, sys.stderr = saved


# -- files --------------------------------------------------------------------------------------
def output_file(text):
    """argparse ``type=`` for ``-o``: an empty name would save nothing, silently."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty file name (-o '') saves nothing; give a file name")
    return text


def check_output_path(path, suffixes=(".npz", ".csv")):
    """Fail early (before minutes of measuring) if ``path`` cannot be written.

    Touches nothing of an existing file or symlink: it makes and removes a temporary file beside
    the target, as the atomic save will.
    """
    if not path:
        raise InputError("an empty output file name saves nothing; give a file name")
    if suffixes and not path.lower().endswith(tuple(suffixes)):
        raise InputError(f"output file {path!r} must end in {' or '.join(suffixes)}")
    if os.path.isdir(path):
        raise InputError(f"output path {path!r} is a directory")
    # The folder as named, not resolved here: the kernel resolves it when the file is made, with its
    # protections (fs.protected_symlinks) that a resolution in user space would bypass.
    folder = os.path.dirname(path) or os.curdir
    if not os.path.isdir(folder):
        raise InputError(f"cannot write {path!r}: folder {folder!r} does not exist")
    try:
        _files.check_writable(path)
    except OSError as e:
        raise InputError(f"cannot write {path!r}: {e.strerror or e}") from None
    return path


def output_argument(p, data=(".npz",), what="the result"):
    """``-o FILE``, given once per file: data files (``data``) and reports (.html, .pdf)."""
    kinds = " or ".join((*data, *REPORT_SUFFIXES))
    p.add_argument("-o", "--output", metavar="FILE", type=output_file, action="append",
                   help=f"save {what} ({kinds}); give -o again for another file, e.g. -o r.npz -o r.html")


def check(paths, data=(".npz",)):
    """Refuse up front (before minutes of measuring) outputs that could not be written."""
    paths = list(paths or ())
    seen = set()
    for path in paths:
        check_output_path(path, suffixes=(*data, *REPORT_SUFFIXES))
        key = os.path.abspath(path)
        if key in seen:
            raise InputError(f"-o {path!r} is given twice")
        seen.add(key)
    for path in filter(_is_report, paths):
        check_report_needs(path)
    return paths


#: What ``corelat._report`` imports to write a report, by suffix (the ``report`` extra).
REPORT_NEEDS = {".html": ("matplotlib",), ".pdf": ("matplotlib", "matplotlib.backends.backend_pdf")}


def check_report_needs(path):
    """Refuse a report whose packages do not load (matplotlib not installed, or not loading under
    ``ulimit -v``) before the measurement, which would otherwise end in a report not written."""
    try:
        importlib.import_module("corelat._report")
        for module in REPORT_NEEDS[os.path.splitext(path)[1].lower()]:
            require(module, "report", "the report")
    except ImportError as e:
        raise InputError(f"-o {shown(path)}: {' '.join(str(e).split())}; nothing was measured") from None


def _is_report(path):
    return path.lower().endswith(REPORT_SUFFIXES)


def write_report(result, path):
    """The report (.html or .pdf) of ``result``, by ``corelat._report``: imported only here, since it
    loads optional dependencies the rest of the command does without."""
    try:
        report = importlib.import_module("corelat._report")
    except ImportError as e:
        raise RuntimeError(f"{shown(path)}: the report was not written: this corelat cannot write reports "
                           f"({' '.join(str(e).split())})") from None
    try:
        report.write_report(result, path)
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as e:
        why = " ".join(str(e).split()) or type(e).__name__
        raise RuntimeError(f"{shown(path)}: the report was not written: {why}") from None


class Saved:
    """What :func:`save` wrote and what failed. As a context manager around the printing of the text:
    says ``saved to FILE`` on stderr when the block ends (also when printing failed), then raises
    the first failure to save (every other one said on a line of its own), also in place of an
    error of the printing."""

    def __init__(self):
        self.paths, self.errors = [], []

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        for path in self.paths:
            print(f"saved to {shown(path)}", file=sys.stderr)
        # A file that was not saved outweighs a failure to print (a broken pipe would even exit 0).
        if self.errors and (kind is None or issubclass(kind, Exception)):
            for e in self.errors[1:]:
                print(f"corelat: error: {message(e)}", file=sys.stderr)
            raise self.errors[0]
        return False


def _save_data(result, path):
    result.save(path)


def save(result, paths, save_data=_save_data):
    """Write ``result`` to every path: data files first (``save_data(result, path)``), then reports.

    Nothing is printed yet (see :class:`Saved`); a file that fails is remembered, not raised, so that
    the others and the text still come.
    """
    saved = Saved()
    paths = list(paths or ())
    for path in [p for p in paths if not _is_report(p)] + [p for p in paths if _is_report(p)]:
        try:
            (write_report if _is_report(path) else save_data)(result, path)
        except (OSError, RuntimeError, ValueError, InputError) as e:
            saved.errors.append(e)
        else:
            saved.paths.append(path)
    return saved
