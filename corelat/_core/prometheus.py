"""The Prometheus text files corelat writes (node_exporter's textfile collector), one way for every
command: ``prometheus_client`` (the optional extra ``prometheus``) makes the text and writes it
atomically (a temporary file beside the target, renamed over it: the collector never reads half a
file)."""

from __future__ import annotations

import os
from typing import Any

from corelat._core.errors import InputError, SaveError
from corelat._core.extras import install_command


def require(what: str = "--prometheus") -> Any:
    """The ``prometheus_client`` module, or an InputError naming ``what`` needs it and the command that
    installs it (checked before anything is measured: a verdict with nowhere to go is lost)."""
    try:
        import prometheus_client
    except ImportError as e:
        raise InputError(f"{what} needs prometheus_client; install it with: {install_command('prometheus')} "
                         f"({e})") from None
    return prometheus_client


def write(registry: Any, path: Any) -> None:
    """Write ``registry``'s metrics to ``path`` in the text format, atomically; a SaveError naming the
    path where it cannot (as every save)."""
    from prometheus_client import write_to_textfile

    path = os.fspath(path)
    try:
        write_to_textfile(path, registry)
    except OSError as e:
        failed = e if isinstance(e, SaveError) else SaveError(e.errno, e.strerror or str(e), path)
        raise failed from None


def text(registry: Any) -> str:
    """``registry``'s metrics in the text exposition format."""
    from prometheus_client import generate_latest

    return generate_latest(registry).decode("utf-8")
