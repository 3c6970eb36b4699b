"""The C extension (the measuring core), loaded on first use: reading and analysing files work without it."""

from __future__ import annotations

import importlib
import importlib.machinery
import os
import platform
import shlex
import sys

from corelat._core.errors import MeasurementError
from corelat._core.extras import install_command

_MODULE = "corelat._corelat"
_STILL_WORKS = "Loading, analysing, comparing and plotting result files still work."


def _supported():
    """True on the platforms the extension is built for (Linux on x86-64 or aarch64)."""
    return sys.platform.startswith("linux") and platform.machine().lower() in ("x86_64", "amd64", "aarch64",
                                                                                "arm64")


def why_missing(e, supported=None):
    """What to tell a user whose import of the extension raised ``e``."""
    supported = _supported() if supported is None else supported
    why = " ".join(str(e).split())
    if not supported:
        return (f"measuring needs Linux on x86-64 or aarch64: corelat's measuring core (its C extension) is "
                f"not available here ({why}). {_STILL_WORKS}")
    if isinstance(e, ModuleNotFoundError) and e.name in (_MODULE, None):
        source = source_folder()
        if source is not None and not _built_here(source):
            return _from_source(source)
        return ("this corelat was installed without its measuring core (the C extension: built with "
                "CORELAT_NO_EXTENSION=1, or where no C compiler was found); reinstall it with a C compiler "
                f"and without CORELAT_NO_EXTENSION: {install_command(None)} --force-reinstall --no-deps "
                f"--no-binary corelat. {_STILL_WORKS}")
    memory = "memory" in why.lower() or "map" in why.lower()
    hint = (" (the address-space limit, ulimit -v, leaves too little to load it: raise the limit)" if memory
            else " (a broken install? reinstall corelat)")
    return f"corelat's measuring core (its C extension) failed to load: {why}{hint}. {_STILL_WORKS}"


def extension():
    """The C extension, or a clear MeasurementError (a CorelatError) where it is not built."""
    try:
        # the compiled module: not Python source, so it has no place in the layers' import graph
        _corelat = importlib.import_module(_MODULE)
    except ImportError as e:
        raise MeasurementError(why_missing(e)) from None
    return _corelat


#: Files beside the package folder that only a source tree (a clone, an sdist unpacked) has.
_PROJECT_FILES = ("pyproject.toml", "setup.py")


def source_folder(package=None):
    """The source tree the running corelat is imported from (project files beside the package), or
    None where it is an installed copy. ``python -m corelat`` started in a clone imports the clone's
    ``corelat/``, which has no extension unless it was built in place (``pip install -e .``)."""
    package = package or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    root = os.path.dirname(package)
    return root if any(os.path.isfile(os.path.join(root, f)) for f in _PROJECT_FILES) else None


def _cores_in(root):
    """The files of a built measuring core in the source tree ``root`` (for any Python)."""
    try:
        names = os.listdir(os.path.join(root, "corelat"))
    except OSError:
        return []
    return sorted(n for n in names if n.startswith("_corelat.") and n.endswith((".so", ".pyd")))


def _built_here(root):
    """True when ``root`` holds a core built for this Python: its import failed for another reason."""
    return any(n.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)) for n in _cores_in(root))


def _from_source(root, cwd=None):
    """numpy's habit: say that the import came from the source folder, and the two ways out."""
    others = _cores_in(root)  # built for another Python (a cpython-310 core under 3.11)
    built = f" for this Python (it holds {', '.join(others)})" if others else ""
    cwd = os.path.abspath(cwd or os.getcwd())
    where = "." if os.path.abspath(root) == cwd else shlex.quote(root)
    python = shlex.quote(sys.executable or "python3")
    return (f"you are importing corelat from its source folder ({root}), where its measuring core (the C "
            f"extension) is not built{built}: run from another folder, or build it there with "
            f"`{python} -m pip install -e {where}` (with a C compiler, without CORELAT_NO_EXTENSION). "
            f"{_STILL_WORKS}")
