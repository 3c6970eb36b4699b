"""The command that installs one of corelat's optional extras, as it would work from here.

``pip install 'corelat[plot]'`` works only where corelat comes from a package index; a checkout
installed with ``pip install .`` or ``-e .`` needs the checkout's path instead. pip records which
one it was in the installed distribution's ``direct_url.json`` (PEP 610).
"""

import importlib
import json
import os
import shlex
import sys
from urllib.parse import unquote, urlparse

from corelat._core.errors import MissingDependencyError


def _source_dir(read_direct_url):
    """The local folder corelat was installed from, or None (an index, or unknown)."""
    try:
        text = read_direct_url()
    except Exception:  # noqa: BLE001 - no metadata (running from a source tree): an index install is the guess
        return None
    if not text:
        return None
    try:
        info = json.loads(text)
    except ValueError:
        return None
    url = urlparse(info.get("url", ""))
    if url.scheme != "file" or "dir_info" not in info:
        return None
    return unquote(url.path) or None


def _read_direct_url():
    from importlib.metadata import distributions

    # A checkout's own corelat.egg-info can shadow the installed distribution: take the one that
    # says where it came from.
    for dist in distributions(name="corelat"):
        text = dist.read_text("direct_url.json")
        if text:
            return text
    return None


def _checkout():
    """The source tree the running corelat is imported from (an editable install, or a checkout on
    sys.path), or None when it is imported from an installed copy."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return root if os.path.isfile(os.path.join(root, "pyproject.toml")) else None


def require(module, extra, what, also=""):
    """Import and return ``module``, or raise a MissingDependencyError (also an ImportError) naming
    ``what`` needs it and the command that installs ``corelat[extra]`` (``extra`` None: corelat's own
    dependencies); ``also`` adds to the message what else to install."""
    try:
        return importlib.import_module(module)
    except ImportError as e:

        package = module.split(".")[0]
        raise MissingDependencyError(f"{what} needs {package}; install it with: "
                                     f"{install_command(extra)}{also} "
                                     f"({e})", name=package) from None


def install_command(extra, *, read_direct_url=_read_direct_url, checkout=_checkout, cwd=None, python=None):
    """A shell command installing ``corelat[extra]`` (``extra`` None: corelat itself) into the running
    interpreter's environment."""
    cwd = os.path.abspath(cwd or os.getcwd())
    python = python or sys.executable or "python3"
    source = checkout() or _source_dir(read_direct_url)
    brackets = f"[{extra}]" if extra else ""
    if source is None:
        target = f"corelat{brackets}"
    elif os.path.abspath(source) == cwd:
        target = f".{brackets}"
    else:
        target = f"{source}{brackets}"
    rel = os.path.relpath(python, cwd) if python.startswith(cwd + os.sep) else python
    return f"{shlex.quote(rel)} -m pip install {shlex.quote(target)}"
