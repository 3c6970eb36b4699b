"""corelat's file container: a NumPy ``.npz`` archive of plain arrays plus one JSON header.

A leaf module (it imports nothing of corelat but the errors and the file helpers): every result kind
writes its arrays and a JSON-able header through :func:`write` and reads them back through
:func:`read`. The header names the ``kind`` of result and the format version. Arrays are read with
``allow_pickle=False``, so a file can never run code.

Files may be hostile. Before anything is allocated, :func:`read` checks the file (a regular file of
at most :data:`~corelat._core.files.MAX_NPZ_BYTES`), the archive's members and their declared sizes
(:data:`MAX_ARRAY_BYTES` uncompressed in all), each array's dtype and shape from its ``.npy``
header (numbers only: no objects, records or pickles; the shape must fit the member), and the JSON
header: a mapping of :data:`MAX_HEADER_CHARS` at most, strings up to :data:`MAX_STRING_CHARS`,
nesting up to :data:`MAX_DEPTH`, no ``NaN``/``Infinity``. What each kind's arrays must hold is
checked by the kind (:mod:`corelat._results.schema` for latency results). Every problem raises
:class:`~corelat._core.errors.InputError` naming the file, in one line.
"""

import hashlib
import io
import json
import marshal
import math
import os
import re
import zipfile
import zlib

import numpy as np

from corelat._core import files as _files
from corelat._core.errors import InputError, unreadable

#: Version of the container layout; bumped when a reader could misread a newer file.
FORMAT_VERSION = 2
FORMAT_NAME = "corelat-result"
#: Files of version 1 carry no ``kind``: they are all latency results.
DEFAULT_KIND = "latency"

#: Uncompressed size of all arrays together: 2 GiB is a 362-CPU sweep at 1000 samples per pair.
MAX_ARRAY_BYTES = 2 * 1024**3
MAX_MEMBERS = 256
#: What a latency file's ``samples`` (CPUs x CPUs x samples) may hold per pair: four times the most a
#: sweep takes (``corelat._system.validate.MAX_SAMPLES``), so a file of a few CPUs cannot ask for
#: gigabytes that no measurement of them makes (a 3 MB file of 2 CPUs asked for 2 GiB, then 4.5 GB).
MAX_SAMPLES_PER_PAIR = 4_000_000
MAX_HEADER_CHARS = 16 * 1024**2
MAX_STRING_CHARS = 64 * 1024
MAX_DEPTH = 32
_MEMBER_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,120}\Z")  # printable; never used as a path
_NPY_HEADER_BYTES = 10000
_NPY_HEADERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}


def _bad(path, what):
    return InputError(f"{path}: {what}")


def short(value, limit=40):
    """``repr(value)`` cut to ``limit`` characters, for messages about hostile values."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def is_npz(path):
    """True when ``path`` starts like a zip archive (an ``.npz`` file); InputError when unreadable.

    Only regular files are opened (never blocking on a FIFO); ``/dev/zero`` and the like are refused.
    """
    path = os.fspath(path)
    try:
        with _files.open_regular(path, max(_files.MAX_NPZ_BYTES, _files.MAX_TEXT_BYTES)) as f:
            head = f.read(4)
    except OSError as e:
        raise unreadable(path, e) from None
    return head.startswith(b"PK")


def write(path, kind, header, arrays):
    """Write ``arrays`` (name -> array) and the JSON-able ``header`` of a result of ``kind`` to ``path``.

    Atomic: written to a temporary file beside ``path`` and renamed over it, so an interrupted or
    failed save (Ctrl-C, full disk) leaves the old file as it was; errors name ``path``.
    """
    full = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "kind": kind, **header}
    members = {"header": np.array(json.dumps(full))}
    for k, v in arrays.items():
        if k == "header":
            raise ValueError("'header' is reserved for the JSON header")
        members[k] = np.asarray(v)
    _files.atomic_write(path, lambda f: _write_archive(f, members))


def _write_archive(f, members):
    """The archive ``np.savez_compressed`` writes (a deflated zip of ``NAME.npy`` members), to the open
    binary file ``f``, without pickles, and always closed: on a failure (Ctrl-C, full disk) NumPy's
    leaves its ZipFile open, and the finaliser then fails at a later garbage collection
    ("seek of closed file") in whatever code runs then."""
    z = zipfile.ZipFile(f, mode="w", compression=zipfile.ZIP_DEFLATED, allowZip64=True)
    try:
        for name, value in members.items():
            with z.open(f"{name}.npy", "w", force_zip64=True) as m:  # as NumPy does (numpy gh-10776)
                np.lib.format.write_array(m, value, allow_pickle=False)
    except BaseException:
        try:
            z.close()  # the temporary file is thrown away; nothing of this may hide the first error
        except Exception:  # noqa: BLE001 - any: the first error is the one to report
            z.fp = None  # so the finaliser does not try again, on a file closed by then
        raise
    z.close()


def read(path, only=None):
    """``(header, arrays)`` of a corelat file; ``header["kind"]`` says which result it holds.

    ``only`` reads some arrays and leaves the others compressed on disk (a fleet's summary of a
    file of raw samples needs its median matrix, not the samples): a collection of member names,
    or a function given ``{name: (shape, dtype)}`` of the file's arrays that returns those to read.
    Names the file lacks are left out of ``arrays``. Every member's ``.npy`` header is checked
    either way. Raises :class:`~corelat._core.errors.InputError` for a file that is not a corelat file,
    is corrupt, exceeds the limits above, or was written by a newer corelat.
    """
    path = os.fspath(path)
    try:
        f = _files.open_regular(path, _files.MAX_NPZ_BYTES)
    except OSError as e:
        raise unreadable(path, e) from None
    try:
        with f, zipfile.ZipFile(f) as z:
            members = _members(z, path)
            header = _header(z, members, path)
            wanted = _wanted(members, only)
            arrays = {name: _read_member(z, members, name) for name in members if name in wanted}
    except InputError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, ValueError, OSError,
            NotImplementedError, KeyError, RuntimeError) as e:
        # NotImplementedError: an unknown compression method; KeyError: a member the central
        # directory names but its local header does not match; RuntimeError: a member whose local
        # header alone says it is encrypted. One line, however long numpy's message.
        why = " ".join(str(e).split())
        raise _bad(path, f"corrupt or unreadable corelat file ({why[:200]})") from None
    return header, arrays


def _wanted(members, only):
    names = set(members) - {"header"}
    if only is None:
        return names
    if callable(only):
        only = only({k: (shape, dtype) for k, (_, shape, dtype) in members.items() if k != "header"})
    return names & set(only)


# -- members ------------------------------------------------------------------------------------
def _members(z, path):
    """``{name: (ZipInfo, shape, dtype)}`` of the ``.npy`` members, after checking declared sizes.

    Members that are not plain-named ``.npy`` files are never read (but count in the limits).
    """
    infos = z.infolist()
    if len(infos) > MAX_MEMBERS:
        raise _bad(path, f"{len(infos)} members; a corelat file holds at most {MAX_MEMBERS}")
    total = sum(i.file_size for i in infos)
    if total > MAX_ARRAY_BYTES:
        raise _bad(path, f"its arrays would take {total / 1024**3:.1f} GiB uncompressed; the most a "
                         f"corelat file may hold is {MAX_ARRAY_BYTES / 1024**3:g} GiB")
    _refuse_encrypted(infos, path)
    out = {}
    for info in infos:
        name = info.filename[:-4] if info.filename.endswith(".npy") else ""
        if not _MEMBER_NAME.match(name):
            continue
        if name in out:
            raise _bad(path, f"member {info.filename!r} appears twice")
        with z.open(info) as m:
            version = np.lib.format.read_magic(m)
            if version not in _NPY_HEADERS:
                raise _bad(path, f"member {name}: unsupported .npy version {version}")
            shape, _, dtype = _NPY_HEADERS[version](m, max_header_size=_NPY_HEADER_BYTES)
        _check_member(name, shape, dtype, info, path)
        out[name] = (info, shape, dtype)
    if "header" not in out:
        raise _bad(path, "no 'header' array; not a corelat result file")
    return out


def _check_member(name, shape, dtype, info, path):
    """A member's declared dtype and shape, before anything of its data is read."""
    if dtype.hasobject or dtype.fields is not None or dtype.subdtype is not None or dtype.kind == "c":
        raise _bad(path, f"member {name}: {dtype} arrays are not allowed (no objects, records, pickles "
                         "or complex numbers)")
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes > info.file_size:
        raise _bad(path, f"member {name}: declares shape {shape} ({nbytes:,} bytes) but holds "
                         f"{info.file_size:,} bytes (truncated or forged)")
    if name == "samples" and len(shape) == 3 and shape[2] > MAX_SAMPLES_PER_PAIR:
        raise _bad(path, f"samples of shape {shape}: {shape[2]:,} samples per CPU pair, where corelat "
                         f"keeps at most {MAX_SAMPLES_PER_PAIR:,}; not read (it would take "
                         f"{math.prod(shape) * 8 / 1024**3:.1f} GiB)")


def _refuse_encrypted(infos, path):
    encrypted = [i.filename for i in infos if i.flag_bits & 0x1]
    if encrypted:  # zipfile would say so naming a ZipInfo, not the file; corelat never encrypts
        raise _bad(path, f"member {short(encrypted[0], 60)} is encrypted (corelat files never are); "
                         "not a corelat file, or a tampered one")


def _read_member(z, members, name):
    info, _, _ = members[name]
    if info.file_size <= _ONE_READ_BYTES:
        # One read (CRC checked) and one parse: NumPy reads a zip stream in many small reads.
        m = io.BytesIO(z.read(info))
        return np.lib.format.read_array(m, allow_pickle=False, max_header_size=_NPY_HEADER_BYTES)
    with z.open(info) as m:
        return np.lib.format.read_array(m, allow_pickle=False, max_header_size=_NPY_HEADER_BYTES)


_ONE_READ_BYTES = 16 << 20  #: members up to this size are read whole (a 192-CPU matrix: 0.3 MB)


# -- the JSON header ------------------------------------------------------------------------------
def _reject_constant(name):
    raise ValueError(f"{name} is not a JSON number")


def _header(z, members, path):
    _, shape, dtype = members["header"]
    if shape != () or dtype.kind != "U":
        raise _bad(path, f"header is a {dtype} array of shape {shape}, not one JSON string")
    if dtype.itemsize // 4 > MAX_HEADER_CHARS:
        raise _bad(path,
                   f"header of {dtype.itemsize // 4:,} characters; at most {MAX_HEADER_CHARS:,} allowed")
    header = parse_json(str(_read_member(z, members, "header")[()]), path)
    if header.get("format") != FORMAT_NAME:
        raise _bad(path, "not a corelat result file")
    version = header.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise _bad(path, f"format version {short(version)} is not a positive integer")
    if version > FORMAT_VERSION:
        raise _bad(path, f"written by a newer corelat (format {short(version)}); upgrade corelat")
    header.setdefault("kind", DEFAULT_KIND)
    if not isinstance(header["kind"], str):
        raise _bad(path, f"kind must be a string, not {short(header['kind'])}")
    return header


def parse_json(text, path, what="header"):
    """The JSON object in ``text`` (a corelat header, or a JSON file corelat wrote), checked as
    headers are: a mapping, no ``NaN``/``Infinity``, nesting and strings within the limits above."""
    try:
        obj = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise _bad(path, f"{what} nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as e:
        raise _bad(path, f"{what} is not valid JSON ({e})") from None
    if not isinstance(obj, dict):
        raise _bad(path, f"{what} is {type(obj).__name__} {short(obj)}, not a mapping; "
                         "not a corelat result file")
    _check_tree(obj, path)
    return obj


def _check_tree(obj, path):
    """Depth and string lengths of a JSON value; iterative (no recursion to exhaust).

    A header of a large machine holds tens of thousands of values: the walk keeps no path text and
    only a failed check walks again (:func:`_tree_problem`) to name where.
    """
    if not _tree_ok(obj):
        _tree_problem(obj, path)


def _tree_ok(obj, depth=1, memo=True):
    if isinstance(obj, str):
        return len(obj) <= MAX_STRING_CHARS
    # Only containers go on the stack: string members are checked where they are met.
    stack = [(obj, depth)]
    while stack:
        v, depth = stack.pop()
        if memo and isinstance(v, list) and len(v) >= _MEMO_MIN_ITEMS:
            if not _list_ok(v, depth):
                return False
        elif not _container_ok(v, depth, stack):
            return False
    return True


#: Lists at least this long are checked once per distinct value (a topology's rows: the same in
#: every file of a fleet, and most of a large machine's header).
_MEMO_MIN_ITEMS = 64
_MEMO_SIZE = 64
_CHECKED: dict = {}


def fingerprint(value):
    """A digest of a JSON value that tells apart what ``==`` does not (``1``, ``1.0``, ``true``; key
    order), for caches of checks on identical values; None where it cannot be made."""
    try:
        return hashlib.sha256(marshal.dumps(value)).digest()
    except (ValueError, RecursionError):  # nested too deep for marshal: no cache, checked in full
        return None


def _list_ok(v, depth):
    """:func:`_tree_ok` of a long list at ``depth``, remembered for lists seen before."""
    fp = fingerprint(v)
    key = None if fp is None else (depth, fp)
    if key is not None and key in _CHECKED:
        return True
    if not _tree_ok_list(v, depth):
        return False
    if key is not None:
        if len(_CHECKED) >= _MEMO_SIZE:
            _CHECKED.clear()
        _CHECKED[key] = True
    return True


def _tree_ok_list(v, depth):
    stack = []
    if not _container_ok(v, depth, stack):
        return False
    return all(_tree_ok(x, d, memo=False) for x, d in stack)


def _container_ok(v, depth, stack):
    """Whether ``v``'s keys and string members are within the limits; pushes its containers."""
    limit = MAX_STRING_CHARS
    if isinstance(v, dict):
        if v and max(map(len, v)) > limit:
            return False
        v = v.values()
    elif not isinstance(v, list):
        return True
    if v and depth >= MAX_DEPTH:  # its members would be one level too deep
        return False
    for x in v:
        if isinstance(x, (dict, list)):
            stack.append((x, depth + 1))
        elif isinstance(x, str) and len(x) > limit:
            return False
    return True


def _tree_problem(obj, path):
    """Raise the InputError naming where ``obj`` breaks :func:`_check_tree`'s limits."""
    stack = [(obj, 1, "header")]
    while stack:
        v, depth, at = stack.pop()
        at = at if len(at) <= 80 else at[:77] + "..."
        if depth > MAX_DEPTH:
            raise _bad(path, f"{at}: nested deeper than {MAX_DEPTH} levels")
        if isinstance(v, str):
            if len(v) > MAX_STRING_CHARS:
                raise _bad(path, f"{at}: a string of {len(v):,} characters; at most {MAX_STRING_CHARS:,}")
        elif isinstance(v, dict):
            for k, x in v.items():
                if len(k) > MAX_STRING_CHARS:
                    raise _bad(path, f"{at}: a key of {len(k):,} characters")
                stack.append((x, depth + 1, f"{at}.{k}"))
        elif isinstance(v, list):
            stack.extend((x, depth + 1, f"{at}[{i}]") for i, x in enumerate(v))
    raise _bad(path, "header breaks the limits on nesting or string length")
