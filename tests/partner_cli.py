"""The corelat command line with a stand-in partner thread, for the tests that run it in a subprocess.

    python tests/partner_cli.py stall ARGS...          the partner never answers, but obeys abort
    python tests/partner_cli.py freeze=SECONDS ARGS...  the partner sleeps, deaf to everything, as frozen

The measurers the sweep makes get the C kernels' test switches; production code reads no such setting.
"""
import sys

from corelat._measure import sweep as _sweep
from corelat.cli import main


def with_partner(make, stall, freeze):
    """``make`` (:func:`corelat._measure.measurers.make_measurer`), its measurers set to stall or freeze."""
    def made(*args, **kwargs):
        m = make(*args, **kwargs)
        m._stall = stall
        if hasattr(m, "_freeze"):  # the chase kernel has no frozen-partner switch
            m._freeze = freeze
        return m
    return made


if __name__ == "__main__":
    how, args = sys.argv[1], sys.argv[2:]
    stall, freeze = how == "stall", float(how.partition("=")[2] or 0) if how.startswith("freeze=") else 0.0
    if not (stall or freeze):
        sys.exit(f"usage: {sys.argv[0]} stall|freeze=SECONDS ARGS...")
    _sweep.make_measurer = with_partner(_sweep.make_measurer, stall, freeze)
    sys.exit(main(args))
