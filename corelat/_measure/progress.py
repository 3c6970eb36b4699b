"""Progress of a sweep: pairs done / total and time left, updated between pairs only."""

import sys
import time


class _Null:
    def update(self, n=1):
        pass

    def close(self):
        pass


class _Callback:
    def __init__(self, fn, total):
        self.fn, self.total, self.done = fn, total, 0

    def update(self, n=1):
        self.done += n
        self.fn(self.done, self.total)

    def close(self):
        pass


class _Text:
    """Fallback when tqdm is not installed: one rewritten line on stderr, at most twice a second."""

    def __init__(self, total, desc):
        self.total, self.desc, self.done = total, desc, 0
        self.start = self.last = time.monotonic()
        self.stream = _terminal()

    def update(self, n=1):
        self.done += n
        now = time.monotonic()
        if now - self.last < 0.5 and self.done < self.total:
            return
        self.last = now
        rate = self.done / max(now - self.start, 1e-9)
        eta = (self.total - self.done) / rate if rate > 0 else float("nan")
        self.stream.write(f"\r{self.desc}: {self.done}/{self.total} pairs, {eta:.0f} s left  ")
        self.stream.flush()

    def close(self):
        self.stream.write("\n")
        self.stream.flush()


def _terminal():
    # The command's stderr escapes control characters (a crafted name must not drive the terminal);
    # the bar's own carriage returns are meant, so it writes to the stream underneath.
    return getattr(sys.stderr, "unfiltered", None) or sys.stderr


def make(progress, total, desc="corelat"):
    """A progress reporter: ``progress`` is False/None (off), True (tqdm, or a text line if tqdm is
    missing) or a callable ``fn(done, total)``."""
    if not progress:
        return _Null()
    if callable(progress):
        return _Callback(progress, total)
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return _Text(total, desc)
    return tqdm(total=total, desc=desc, unit="pair", leave=False, file=_terminal())
