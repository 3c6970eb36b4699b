"""corelat's file container: a NumPy ``.npz`` archive of plain arrays plus one JSON header.

A leaf module (it imports nothing of corelat but the errors): every result kind writes its arrays
and a JSON-able header through :func:`write` and reads them back through :func:`read`. The header
names the ``kind`` of result and the format version. Arrays are read with ``allow_pickle=False``,
so a file can never run code.
"""

import json
import os
import zipfile

import numpy as np

from ._errors import InputError

#: Version of the container layout; bumped when a reader could misread a newer file.
FORMAT_VERSION = 2
FORMAT_NAME = "corelat-result"
#: Files of version 1 carry no ``kind``: they are all latency results.
DEFAULT_KIND = "latency"


def is_npz(path):
    """True when ``path`` starts like a zip archive (an ``.npz`` file); InputError when unreadable."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror or e}") from None
    return head.startswith(b"PK")


def write(path, kind, header, arrays):
    """Write ``arrays`` (name -> array) and the JSON-able ``header`` of a result of ``kind`` to ``path``."""
    full = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "kind": kind, **header}
    members = {"header": np.array(json.dumps(full))}
    for k, v in arrays.items():
        if k == "header":
            raise ValueError("'header' is reserved for the JSON header")
        members[k] = np.asarray(v)
    path = os.fspath(path)
    # np.savez appends .npz to names without it; write through a file object to keep the name.
    with open(path, "wb") as f:
        np.savez_compressed(f, **members)


def read(path):
    """``(header, arrays)`` of a corelat file; ``header["kind"]`` says which result it holds.

    Raises :class:`~corelat._errors.InputError` for a file that is not a corelat file, is corrupt,
    or was written by a newer corelat.
    """
    path = os.fspath(path)
    try:
        # Our own file object: np.load leaks its handle when the archive is corrupt.
        with open(path, "rb") as f, np.load(f, allow_pickle=False) as z:
            header = json.loads(str(z["header"][()]))
            if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
                raise InputError(f"{path}: not a corelat result file")
            if int(header.get("version", 0)) > FORMAT_VERSION:
                raise InputError(
                    f"{path}: written by a newer corelat (format {header['version']}); upgrade corelat"
                )
            header.setdefault("kind", DEFAULT_KIND)
            arrays = {k: np.array(z[k]) for k in z.files if k != "header"}
    except InputError:
        raise
    except (KeyError, ValueError, TypeError, OSError, zipfile.BadZipFile, EOFError) as e:
        raise InputError(f"{path}: corrupt or unreadable corelat file ({e})") from None
    return header, arrays

