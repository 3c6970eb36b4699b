"""The ``corelat`` command.

``corelat [ROUND_TRIPS [SAMPLES]] [options]`` measures the latency matrix (core-to-core-latency's
habits); ``corelat COMMAND ...`` runs a subcommand. Each subcommand lives in its own module
``corelat/cli/cmd_NAME.py`` with ``add_arguments(parser)`` and ``run(args) -> int``; the table below is
the only place that names them, and modules are imported only when their command runs.

Exit status: 0 success, 1 the measurement failed (e.g. time-out), 2 bad input, 130 interrupted.
"""

import argparse
import importlib
import os
import sys
import warnings

from corelat._core.errors import InputError
from corelat._version import __version__

from .. import _early
from . import outputs

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
    "reference": ("cmd_reference", "make a reference (a known-good machine's latency classes) from results"),
    "verify": ("cmd_verify", "judge this machine or a result against a reference, in one line (exit 0/3)"),
    "place": ("cmd_place", "where to put K threads: the K CPUs closest together (or apart) in a result"),
}

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class ValueAfterEquals(argparse.Action):
    """An option whose value is optional and, when given, written ``--option=VALUE`` only: before the
    positional arguments, ``--option VALUE`` would take ROUND_TRIPS for the value (``corelat --retest
    1000 300``), so a value after a space is refused as ambiguous (see ``_Parser``)."""

    def __init__(self, option_strings, dest, **kwargs):
        kwargs.setdefault("nargs", "?")
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)


class _Parser(argparse.ArgumentParser):
    # argparse prints its usage (5-8 lines here) and exits 2 by itself: one line instead.
    def error(self, message):
        raise _UsageError(f"{self.prog}: error: {message} (see '{self.prog} --help')")

    def parse_known_args(self, args=None, namespace=None):
        args = list(sys.argv[1:] if args is None else args)
        self._refuse_values_after_a_space(args)
        return super().parse_known_args(args, namespace)

    def _refuse_values_after_a_space(self, args):
        for word, after in zip(args, args[1:]):
            if word == "--":
                return
            action = self._equals_action(word)
            if action is not None and not after.startswith("-"):
                name = action.option_strings[0]
                self.error(f"{word} {after}: ambiguous ({after} could be its value or a positional "
                           f"argument); write {name}={after} for its value ({name} alone takes none)")

    def _equals_action(self, word):
        if not word.startswith("--") or "=" in word:
            return None
        found = {a for opt, a in self._option_string_actions.items() if opt == word or
                 (self.allow_abbrev and opt.startswith(word))}
        action = found.pop() if len(found) == 1 else None
        return action if isinstance(action, ValueAfterEquals) else None


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


_message = outputs.message


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
        with outputs.printable_streams() as stdout:
            status = _main(argv)
            _early.hold()
            if stdout.discarded:
                print("corelat: note: standard output is closed: the text output was not shown",
                      file=sys.stderr)
            return status
    except KeyboardInterrupt:  # landed in one of _main's handlers, or as the streams were restored
        _early.hold()
        print("corelat: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _main(argv):
    try:
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
        return _failed(e)
    except SystemExit as e:  # argparse --help/--version
        return _exit_status(e)
    except Exception as e:  # a bug: still one line, unless asked for the traceback
        if _early.debug():
            raise
        print(f"corelat: internal error: {type(e).__name__}: {_message(e)} (set CORELAT_DEBUG=1 for details)",
              file=sys.stderr)
        return EXIT_FAILED


def _failed(e):
    print(f"corelat: error: {_message(e)}", file=sys.stderr)
    if isinstance(e, outputs.StreamError):
        _quiet_stdout()  # what is still buffered would fail again at exit, out of reach
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
    # The command's module loads NumPy (``import corelat`` no longer does): Ctrl-C stays with the quiet
    # handler of _early until it is loaded, since NumPy turns a KeyboardInterrupt inside its import into
    # an ImportError ("PyCapsule_Import could not import module datetime"), an internal error here.
    module = importlib.import_module(f"{__name__}.{modname}")
    _early.release()
    args = _parser(name, module).parse_args(argv)
    return int(module.run(args) or 0)
