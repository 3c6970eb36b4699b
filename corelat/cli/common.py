"""Helpers shared by CLI commands: output paths, the terminal."""

import json
import os
import sys

from .._errors import InputError


def check_output_path(path, suffixes=(".npz", ".csv")):
    """Fail early (before minutes of measuring) if ``path`` cannot be written."""
    if suffixes and not path.lower().endswith(tuple(suffixes)):
        raise InputError(f"output file {path!r} must end in {' or '.join(suffixes)}")
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise InputError(f"output path {path!r} is a directory")
    if not os.path.isdir(folder):
        raise InputError(f"cannot write {path!r}: folder {folder!r} does not exist")
    # Try for real: permission bits say nothing for root, read-only mounts or /proc.
    existed = os.path.exists(path)
    try:
        with open(path, "ab"):
            pass
    except OSError as e:
        raise InputError(f"cannot write {path!r}: {e.strerror or e}") from None
    if not existed:
        os.unlink(path)
    return path


def add_output_arguments(p, what="the result"):
    """``-o FILE`` (a corelat .npz that ``corelat.load`` reads back) and ``--json``."""
    p.add_argument("-o", "--output", metavar="FILE", help=f"save {what} (.npz)")
    p.add_argument("--json", action="store_true", help=f"print {what} as JSON instead of text")


def print_json(result):
    """``result.to_dict()`` as JSON on stdout."""
    json.dump(result.to_dict(), sys.stdout, indent=1, allow_nan=False)
    sys.stdout.write("\n")


def save(result, path):
    """Save ``result`` to ``path`` and say so on stderr."""
    result.save(path)
    print(f"saved to {path}", file=sys.stderr)


def stderr_is_tty():
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False
