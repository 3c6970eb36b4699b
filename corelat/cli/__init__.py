"""The ``corelat`` command.

``corelat [ROUND_TRIPS [SAMPLES]] [options]`` measures the latency matrix (core-to-core-latency's
habits); ``corelat COMMAND ...`` runs a subcommand. Each subcommand lives in its own module
``corelat/cli/cmd_NAME.py`` with ``add_arguments(parser)`` and ``run(args) -> int``; the table below is
the only place that names them, and modules are imported only when their command runs.

Exit status: 0 success, 1 the measurement failed (e.g. time-out), 2 bad input, 130 interrupted.
"""

import argparse
import errno
import importlib
import os
import sys
import warnings

from corelat._core.errors import InputError
from corelat._version import __version__

from .. import _early

#: name -> (module, one-line help)
COMMANDS = {
    "measure": ("cmd_measure", "measure the core-to-core latency matrix (the default command)"),
    "check": ("cmd_check", "what on this machine can distort measurements (governor, load, hypervisor, ...)"),
    "locks": ("cmd_locks", "what locks, atomics, instructions and system calls cost (cpuperf's tests)"),
    "compare": ("cmd_compare", "compare result files side by side (ratios to the first)"),
    "plot": ("cmd_plot", "draw a result's heatmap or sample distributions to an image file"),
    "topology": ("cmd_topology", "this machine's sockets, NUMA nodes, caches, cores and SMT siblings"),
    "report": ("cmd_report", "what a result file says: summary, structure, topology agreement"),
    "smt": ("cmd_smt", "what SMT siblings cost each other: latency, and a busy sibling's slowdown"),
    "fleet": ("cmd_fleet", "measure every node of an MPI job (mpiexec/srun) and name the node that is off"),
    "fleet-report": ("cmd_fleet_report", "the fleet report of a folder of node results, without MPI"),
    "placement": ("cmd_placement",
                  "the matrix once per home of the line (every NUMA node): where memory lives"),
}

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class _Parser(argparse.ArgumentParser):
    # argparse prints its usage (5-8 lines here) and exits 2 by itself: one line instead.
    def error(self, message):
        raise _UsageError(f"{self.prog}: error: {message} (see '{self.prog} --help')")


class _UsageError(Exception):
    pass


def _parser(name, module):
    prog = "corelat" if name == "measure" else f"corelat {name}"
    p = _Parser(prog=prog, description=module.__doc__.strip().splitlines()[0] if module.__doc__ else None)
    module.add_arguments(p)
    return p


def _top_help():
    lines = [
        "usage: corelat [ROUND_TRIPS [SAMPLES]] [options]   measure the latency matrix",
        "       corelat COMMAND [options]",
        "",
        "commands:",
    ]
    lines += [f"  {name:<10} {help_}" for name, (_, help_) in COMMANDS.items()]
    lines += ["",
              "Run 'corelat COMMAND --help' for a command's options; 'corelat --version' for the version."]
    return "\n".join(lines)


def _message(e):
    """One line for an exception, naming the file for OSErrors that have one."""
    if isinstance(e, OSError) and e.filename is not None:
        return f"{e.filename}: {e.strerror or e}"
    if isinstance(e, OSError) and e.errno == errno.EAGAIN:
        return (f"{e.strerror or e}: cannot start a thread (the limit on threads or processes is reached: "
                "ulimit -u, or the cgroup's pids.max)")
    return " ".join(str(e).split()) or type(e).__name__


def _quiet_stdout():
    # The reader of our stdout went away (`corelat --csv | head`): send the rest nowhere, so that
    # the flush at exit does not fail again.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def _exit_status(e):
    """The status a SystemExit asks for (argparse's --help, --version, usage errors)."""
    try:  # flush now: a buffered stdout (no PYTHONUNBUFFERED) would fail at exit, out of reach
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_stdout()
    return e.code if isinstance(e.code, int) else 0


def main(argv=None):
    """Entry point of the console script; returns the exit status."""
    try:
        _early.release()
        status = _run(list(sys.argv[1:] if argv is None else argv))
        sys.stdout.flush()
        return status
    except _UsageError as e:
        print(e, file=sys.stderr)
        return EXIT_USAGE
    except InputError as e:
        print(f"corelat: error: {_message(e)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("corelat: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # Like other Unix tools: no message when the reader of our output has gone.
        _quiet_stdout()
        return EXIT_OK
    except MemoryError:
        print("corelat: error: out of memory (try fewer CPUs or fewer samples, or raise the memory limit)",
              file=sys.stderr)
        return EXIT_FAILED
    except (TimeoutError, OSError, RuntimeError, ValueError) as e:
        print(f"corelat: error: {_message(e)}", file=sys.stderr)
        return EXIT_FAILED
    except SystemExit as e:  # argparse --help/--version
        return _exit_status(e)
    except Exception as e:  # a bug: still one line, unless asked for the traceback
        if os.environ.get("CORELAT_DEBUG"):
            raise
        print(f"corelat: internal error: {type(e).__name__}: {_message(e)} (set CORELAT_DEBUG=1 for details)",
              file=sys.stderr)
        return EXIT_FAILED


def _show_warning(message, category, filename, lineno, file=None, line=None):
    # Python's format names our source file and repeats the line of code: one line for users instead.
    print(f"corelat: warning: {' '.join(str(message).split())}", file=file or sys.stderr)


def _run(argv):
    warnings.showwarning = _show_warning
    if argv in (["--version"], ["-V"]):

        print(f"corelat {__version__}")
        return EXIT_OK
    if argv and argv[0] in ("-h", "--help") and len(argv) == 1:
        print(_top_help())
        print()
        argv = ["measure", "--help"]
    name = argv[0] if argv and argv[0] in COMMANDS else "measure"
    if argv and argv[0] == name:
        argv = argv[1:]
    modname, _ = COMMANDS[name]
    module = importlib.import_module(f"{__name__}.{modname}")
    args = _parser(name, module).parse_args(argv)
    return int(module.run(args) or 0)
