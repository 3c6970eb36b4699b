"""The corelat command line with measuring replaced by a result read from a file, for the tests of
what the command does with its output (stdout closed, broken or full; -o files) without running kernels.

    CORELAT_FAKE_RESULT=FILE python tests/fake_cli.py ARGS...

Every measuring command (measure, locks, smt, placement) returns the result in FILE at once.
"""
import os
import sys
import types

import corelat
from corelat._measure import placement, smt, sweep
from corelat._measure.options import SweepOptions
from corelat.cli import cmd_locks, main


def fake(*args, **kwargs):
    return corelat.load(os.environ["CORELAT_FAKE_RESULT"])


if __name__ == "__main__":
    # the options the measuring commands read before the sweep (none set: no budget)
    options = staticmethod(lambda *a, **k: types.SimpleNamespace(budget=None))
    SweepOptions.build = SweepOptions.for_smt = options  # type: ignore[method-assign]
    sweep.run = placement.run = smt.run = cmd_locks.locks = fake
    sys.exit(main(sys.argv[1:]))
