"""Reading and writing results: corelat's ``.npz`` files and other tools' text matrices.

corelat files are NumPy ``.npz`` archives holding plain arrays and one JSON string of metadata;
they are read with ``allow_pickle=False``, so a file can never run code.
"""

import json
import os
import zipfile

import numpy as np

from ._errors import InputError
from ._result import LatencyResult, PairFlag, thaw

#: Version of the ``.npz`` layout; bumped when a reader could misread a newer file.
FORMAT_VERSION = 1
_FORMAT_NAME = "corelat-result"


def save(result, path):
    """Write ``result`` to ``path`` (``.npz``: arrays plus JSON metadata, no pickle)."""
    header = {
        "format": _FORMAT_NAME,
        "version": FORMAT_VERSION,
        "kernel": result.kernel,
        "name": result.name,
        "metadata": thaw(result.metadata),
        "extras": sorted(result.extras),
    }
    arrays = {
        "header": np.array(json.dumps(header)),
        "cpus": np.asarray(result.cpus, dtype=np.int64),
        "samples": result.samples,
        "flags": result.flags,
    }
    for k, v in result.extras.items():
        arrays["extra_" + k] = v
    path = os.fspath(path)
    # np.savez appends .npz to names without it; write through a file object to keep the name.
    with open(path, "wb") as f:
        np.savez_compressed(f, **arrays)


def load(path):
    """Read a result file: corelat ``.npz``, or another tool's text matrix.

    Text formats understood: core-to-core-latency's ``--csv`` output (square lower triangle, no
    labels) and a labelled CSV as written by :meth:`LatencyResult.to_csv` (``labelled=True``).
    Raises :class:`~corelat._errors.InputError` for a missing, unreadable or corrupt file.
    """
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror or e}") from None
    if head.startswith(b"PK"):
        return _load_npz(path)
    from . import _formats

    return _formats.load_text(path)


def _load_npz(path):
    try:
        # Our own file object: np.load leaks its handle when the archive is corrupt.
        with open(path, "rb") as f, np.load(f, allow_pickle=False) as z:
            header = json.loads(str(z["header"][()]))
            if header.get("format") != _FORMAT_NAME:
                raise InputError(f"{path}: not a corelat result file")
            if int(header.get("version", 0)) > FORMAT_VERSION:
                raise InputError(
                    f"{path}: written by a newer corelat (format {header['version']}); upgrade corelat"
                )
            cpus = tuple(int(c) for c in z["cpus"])
            samples = np.array(z["samples"], dtype=np.float64)
            flags = np.array(z["flags"])
            extras = {k: np.array(z["extra_" + k]) for k in header.get("extras", [])}
    except InputError:
        raise
    except (KeyError, ValueError, TypeError, OSError, zipfile.BadZipFile, EOFError) as e:
        raise InputError(f"{path}: corrupt or unreadable corelat file ({e})") from None
    try:
        return LatencyResult(
            cpus=cpus,
            kernel=header.get("kernel", "?"),
            samples=samples,
            metadata=header.get("metadata", {}),
            name=header.get("name", ""),
            flags=flags,
            extras=extras,
        )
    except ValueError as e:
        raise InputError(f"{path}: inconsistent corelat file ({e})") from None


def from_matrix(matrix, cpus=None, *, kernel="unknown", name="", metadata=None, symmetric=True):
    """A :class:`LatencyResult` from a plain ``(n, n)`` matrix of one value per pair (ns).

    Missing cells are NaN. With ``symmetric=True`` a pair known in one half only is mirrored to the
    other. The result is marked value-only (no raw samples).
    """
    m = np.array(matrix, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise InputError(f"a latency matrix must be square, got shape {m.shape}")
    n = m.shape[0]
    if n < 2:
        raise InputError("a latency matrix needs at least 2 CPUs")
    if cpus is None:
        cpus = tuple(range(n))
    if len(cpus) != n:
        raise InputError(f"{len(cpus)} CPU labels for a {n}x{n} matrix")
    np.fill_diagonal(m, np.nan)
    flags = np.where(np.isnan(m), 0, PairFlag.MEASURED | PairFlag.VALUE_ONLY)
    if symmetric:
        fill = np.isnan(m) & ~np.isnan(m.T)
        m[fill] = m.T[fill]
        flags[fill] = PairFlag.MIRRORED | PairFlag.VALUE_ONLY
    md = {"value_only": True, "symmetric": bool(symmetric)}
    md.update(metadata or {})
    return LatencyResult(cpus=cpus, kernel=kernel, samples=m[:, :, None], metadata=md, name=name, flags=flags)
