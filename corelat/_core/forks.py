"""A fork waits, a bounded while, for another thread's import of corelat's modules to end.

A fork copies only the thread that forks. A module another thread was importing at that moment stays
half-imported in the child, its import lock held by a thread the child does not have: the child's
first use of it (``corelat.measure`` loads the measuring modules on first use) waits for that lock for
ever. The wait before the fork lets the other thread finish; a child forked past the bound is told
on its standard error which of corelat's modules it cannot import. Registered by ``import corelat``.
"""

from __future__ import annotations

import _thread
import contextlib
import os
import sys
import time

# An import of corelat's modules takes well under a second even on a loaded machine; the bound covers
# a slow disk and keeps a fork from waiting on an import that waits on the forking thread itself.
WAIT_S = 5.0
_POLL_S = 0.002
_left_behind: list = []  # the modules still being imported when the fork went ahead (the child reads it)


def _module_locks():
    """{name: weak reference to its lock} of the import system's per-module locks (a private table,
    there from Python 3.3 on), or None where this Python has none we can see."""
    locks = getattr(sys.modules.get("importlib._bootstrap"), "_module_locks", None)
    return locks if isinstance(locks, dict) else None


def importing_elsewhere(locks=None, me=None):
    """The names of corelat's modules that a thread other than this one is importing now."""
    me = _thread.get_ident() if me is None else me
    locks = _module_locks() if locks is None else locks
    busy = []
    for name, ref in list((locks or {}).items()):
        if name != "corelat" and not name.startswith("corelat."):
            continue
        lock = ref() if callable(ref) else ref
        # _ModuleLock: owner (a thread id) and count (an int, or a list from Python 3.12) while held
        if lock is not None and getattr(lock, "count", 0) and getattr(lock, "owner", None) not in (None, me):
            busy.append(name)
    if locks is None:  # no lock table: a module in sys.modules still running its body
        busy = [name for name, module in list(sys.modules.items())
                if (name == "corelat" or name.startswith("corelat."))
                and getattr(getattr(module, "__spec__", None), "_initializing", False)]
    return sorted(busy)


def wait_for_imports(bound=WAIT_S, *, poll=_POLL_S, busy=importing_elsewhere, clock=time.monotonic,
                     sleep=time.sleep):
    """Wait up to ``bound`` seconds until no other thread imports corelat's modules; what is left."""
    deadline = clock() + bound
    left = busy()
    while left and clock() < deadline:
        sleep(poll)  # releases the GIL: the importing thread runs
        left = busy()
    return left


def _before():
    _left_behind[:] = wait_for_imports()


def _after_in_child():
    if _left_behind:
        names = ", ".join(_left_behind)
        msg = (f"corelat: this process was forked while another thread was importing {names} (still "
               f"importing after {WAIT_S:g} s); the child cannot import them: using them here will wait "
               "for ever. Import corelat's modules before forking (e.g. call corelat.timer_info() and "
               "touch corelat.measure first), or start the child with spawn.\n")
        with contextlib.suppress(OSError):
            os.write(2, msg.encode())
    _left_behind.clear()


def _after_in_parent():
    _left_behind.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before, after_in_child=_after_in_child, after_in_parent=_after_in_parent)
