"""A generator of hostile result files (kept as code, not as binary blobs).

``generate(folder)`` writes every case into ``folder`` and returns ``[(case name, path)]``; every one
of them must be refused by ``corelat.load`` with an ``InputError`` (and by ``corelat report`` with
exit status 2 and one line), quickly and without allocating what the file declares.

Files start from a valid result written by :meth:`corelat.LatencyResult.save`; its members are read
back with plain NumPy/zipfile and rewritten with one thing broken. Run as a script to write the
files into a folder: ``python tests/hostile.py OUT_DIR``.
"""

import io
import json
import os
import re
import struct
import sys
import zipfile
import zlib

import numpy as np

BIG_NAME = 10 * 1024 * 1024  # characters: made `plot` run past 20 s before names were capped

#: ``python -c SAVE_LOOP PATH``: saves a result over PATH forever (send it SIGINT mid-save).
SAVE_LOOP = r"""
import sys, numpy as np, corelat
s = np.random.default_rng(0).uniform(20, 90, (48, 48, 200))
r = corelat.LatencyResult(cpus=range(48), kernel="cas", samples=s, name="new")
print("ready", flush=True)
while True:
    r.save(sys.argv[1])
"""
#: ``python -c SAVE_UNDER_FSIZE PATH``: one save under a 64 KiB file size limit; prints
#: ``OSError ERRNO NAMED`` (NAMED: whether the message names PATH).
SAVE_UNDER_FSIZE = r"""
import resource, signal, sys, numpy as np, corelat
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() then fails with EFBIG instead of killing us
path = sys.argv[1]
s = np.random.default_rng(0).uniform(20, 90, (40, 40, 300))
r = corelat.LatencyResult(cpus=range(40), kernel="cas", samples=s, name="new")
resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, resource.RLIM_INFINITY))
try:
    r.save(path)
    print("saved")
except OSError as e:
    print("OSError", e.errno, path in str(e))
"""


def _valid_members(folder):
    import corelat

    rng = np.random.default_rng(1)
    s = rng.uniform(20, 80, (3, 3, 6))
    for i in range(3):
        s[i, i] = np.nan
    r = corelat.LatencyResult(cpus=(0, 1, 2), kernel="cas", samples=s, name="valid",
                              metadata={"warnings": ["w"], "notes": ["n"], "symmetric": True})
    path = os.path.join(folder, "valid.npz")
    r.save(path)
    with zipfile.ZipFile(path) as z:
        out = {}
        for info in z.infolist():
            with z.open(info) as m:
                out[info.filename[:-4]] = np.lib.format.read_array(m, allow_pickle=False)
    return path, out


def npy(a):
    """A ``.npy`` member holding ``a`` (object arrays pickled, as a hostile writer would)."""
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.asanyarray(a), allow_pickle=True)
    return buf.getvalue()


def npy_forged(shape, dtype="<f8", data=b"\0" * 64):
    """A ``.npy`` member whose header declares ``shape`` but that holds only ``data``."""
    header = repr({"descr": dtype, "fortran_order": False, "shape": tuple(shape)}).encode("latin1")
    pad = 64 - (10 + len(header) + 1) % 64
    header += b" " * pad + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + data


def write_zip(path, members, compress=zipfile.ZIP_DEFLATED):
    with zipfile.ZipFile(path, "w", compress) as z:
        for name, data in members.items():
            z.writestr(name if name.endswith(".npy") else name + ".npy", data)


def _deflate(data):
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


def write_raw_zip(path, members):
    """A zip of ``[(name, deflated bytes, uncompressed size, crc)]``, sizes in zip64 extras.

    Written by hand so that a member can hold a stream built without compressing its contents.
    """
    with open(path, "wb") as f:
        central = []
        for name, comp, size, crc in members:
            offset = f.tell()
            fname = name.encode()
            extra = struct.pack("<HHQQ", 1, 16, size, len(comp))
            f.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 45, 0, 8, 0, 0x21, crc, 0xFFFFFFFF, 0xFFFFFFFF,
                                len(fname), len(extra)) + fname + extra)
            f.write(comp)
            central.append(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 45, 45, 0, 8, 0, 0x21, crc,
                                       0xFFFFFFFF, 0xFFFFFFFF, len(fname), len(extra), 0, 0, 0, 0, offset)
                           + fname + extra)
        start = f.tell()
        f.write(b"".join(central))
        f.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(central), len(central), f.tell() - start,
                            start, 0))


def _zip_bomb(path, members, gib=4):
    """``samples`` declared as, and decompressing to, ``gib`` GiB of zeros, in a file of a few MB.

    The zeros are one 64 MiB deflate segment (ended by a full flush, so it stands alone) repeated.
    """
    n = 16
    seg_bytes = 64 * 1024 * 1024
    k = gib * 1024**3 // (n * n * 8)
    head = npy_forged((n, n, k), data=b"")
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = c.compress(head) + c.flush(zlib.Z_FULL_FLUSH)
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    zero = bytes(seg_bytes)
    seg = c.compress(zero) + c.flush(zlib.Z_FULL_FLUSH)
    count = n * n * k * 8 // seg_bytes
    crc = zlib.crc32(head)
    for _ in range(count):
        crc = zlib.crc32(zero, crc)
    stream = first + seg * count + b"\x03\x00"  # an empty final block ends the stream
    others = dict(members, cpus=npy(np.arange(n)), flags=npy(np.ones((n, n), np.uint32)))
    raw = [(name + ".npy", _deflate(blob), len(blob), zlib.crc32(blob))
           for name, blob in others.items() if name != "samples"]
    write_raw_zip(path, raw + [("samples.npy", stream, len(head) + n * n * k * 8, crc)])


def _header_cases(base):
    h = json.loads(str(base["header"][()]))

    def with_header(obj):
        return dict(base, header=np.array(obj if isinstance(obj, str) else json.dumps(obj)))

    def meta(**kw):
        return dict(h, metadata=dict(h["metadata"], **kw))

    yield "header_list", with_header([1, 2])
    yield "header_string", with_header(json.dumps("corelat-result"))
    yield "header_number", with_header("42")
    yield "header_null", with_header("null")
    yield "header_not_json", with_header("{not json")
    yield "header_empty", with_header("")
    yield "header_bytes_array", dict(base, header=np.frombuffer(b"{}", np.uint8))
    yield "header_1d", dict(base, header=np.array([json.dumps(h)]))
    yield "header_int_scalar", dict(base, header=np.array(5))
    yield "header_missing", {k: v for k, v in base.items() if k != "header"}
    yield "format_wrong", with_header(dict(h, format="something-else"))
    yield "format_missing", with_header({k: v for k, v in h.items() if k != "format"})
    yield "version_infinity", with_header(re.sub(r'"version": \d+', '"version": Infinity', json.dumps(h)))
    yield "version_nan", with_header(re.sub(r'"version": \d+', '"version": NaN', json.dumps(h)))
    yield "kind_int", with_header(dict(h, kind=5))
    yield "kind_unknown", with_header(dict(h, kind="x" * 50))
    yield "version_string", with_header(dict(h, version="1"))
    yield "version_true", with_header(dict(h, version=True))
    yield "version_float", with_header(dict(h, version=1.5))
    yield "version_huge", with_header(dict(h, version=10**400))
    yield "version_negative", with_header(dict(h, version=-1))
    yield "version_newer", with_header(dict(h, version=99))
    yield "metadata_list", with_header(dict(h, metadata=[1]))
    yield "metadata_string", with_header(dict(h, metadata="x"))
    yield "warnings_int", with_header(meta(warnings=5))
    yield "notes_int", with_header(meta(notes=5))
    yield "warnings_of_ints", with_header(meta(warnings=[1, 2]))
    yield "symmetric_string", with_header(meta(symmetric="no"))
    yield "timer_frequency_string", with_header(meta(timer={"name": "x", "frequency_hz": "fast"}))
    yield "parameters_list", with_header(meta(parameters=[1]))
    yield "topology_garbage", with_header(meta(topology={"format": "corelat.topology",
                                                         "version": 1, "cpus": 5}))
    yield "topology_string", with_header(meta(topology="x"))
    yield "order_boundaries_strings", with_header(meta(order={"by": "os", "boundaries": {"core": ["a"]}}))
    yield "kernel_int", with_header(dict(h, kernel=3))
    yield "kernel_long", with_header(dict(h, kernel="k" * 100_000))
    yield "name_int", with_header(dict(h, name=7))
    yield "name_10mb", with_header(dict(h, name="n" * BIG_NAME))
    yield "string_in_metadata_10mb", with_header(meta(hostname="h" * BIG_NAME))
    yield "extras_int", with_header(dict(h, extras=3))
    yield "extras_path", with_header(dict(h, extras=["../../etc/passwd"]))
    yield "extras_missing_member", with_header(dict(h, extras=["first"]))
    yield "deep_nesting", with_header('{"format": "corelat-result", "version": 1, "metadata": '
                                      + "[" * 100_000 + "]" * 100_000 + "}")
    yield "deep_nesting_dicts", with_header(meta(x=json.loads('{"a":' * 200 + "1" + "}" * 200)))


def _array_cases(base):
    s = base["samples"]
    yield "samples_negative", dict(base, samples=npy(np.where(np.isnan(s), s, -137.3)))
    yield "samples_inf", dict(base, samples=npy(np.where(np.isnan(s), s, np.inf)))
    yield "samples_minus_inf", dict(base, samples=npy(np.where(np.isnan(s), s, -np.inf)))
    yield "samples_all_zero", dict(base, samples=npy(np.where(np.isnan(s), s, 0.0)))
    yield "samples_all_nan", dict(base, samples=npy(np.full_like(s, np.nan)))
    yield "samples_complex", dict(base, samples=npy(s.astype(np.complex128)))
    yield "samples_datetime", dict(base, samples=npy(np.zeros(s.shape, "datetime64[ns]")))
    yield "samples_timedelta", dict(base, samples=npy(np.ones(s.shape, "timedelta64[ns]")))
    yield "samples_strings", dict(base, samples=npy(np.full(s.shape, "12")))
    yield "samples_object_pickle", dict(base, samples=npy(np.array([None, 1], dtype=object)))
    yield "samples_record", dict(base, samples=npy(np.zeros(s.shape, [("a", "<f8")])))
    yield "samples_2d", dict(base, samples=npy(s[:, :, 0]))
    yield "samples_wrong_n", dict(base, samples=npy(s[:2, :2]))
    yield "samples_scalar", dict(base, samples=npy(np.float64(3)))
    yield "samples_64gib_declared", dict(base, samples=npy_forged((2, 2, 2**31)))
    yield "samples_huge_shape", dict(base, samples=npy_forged((2**40, 2**40, 2**40)))
    yield "samples_truncated_data", dict(base, samples=npy(s)[:-20])
    yield "cpus_duplicate", dict(base, cpus=npy(np.array([0, 0, 1])))
    yield "cpus_negative", dict(base, cpus=npy(np.array([0, -1, 2])))
    yield "cpus_float", dict(base, cpus=npy(np.array([0.0, 1.5, 2.0])))
    yield "cpus_2d", dict(base, cpus=npy(np.array([[0, 1, 2]])))
    yield "cpus_strings", dict(base, cpus=npy(np.array(["0", "1", "2"])))
    yield "cpus_too_many_declared", dict(base, cpus=npy_forged((10**6,), "<i8", b""))
    yield "flags_negative", dict(base, flags=npy(np.full((3, 3), -1, np.int64)))
    yield "flags_float", dict(base, flags=npy(np.ones((3, 3))))
    yield "flags_wrong_shape", dict(base, flags=npy(np.ones((2, 2), np.uint32)))
    yield "flags_missing", {k: v for k, v in base.items() if k != "flags"}
    yield "cpus_missing", {k: v for k, v in base.items() if k != "cpus"}
    yield "samples_missing", {k: v for k, v in base.items() if k != "samples"}
    yield "npy_bad_magic", dict(base, samples=b"\x93NUMPZ\x01\x00" + npy(s)[8:])
    yield "npy_version_9", dict(base, samples=b"\x93NUMPY\x09\x00" + npy(s)[8:])
    yield "npy_header_huge", dict(base, samples=b"\x93NUMPY\x01\x00\xff\xff" + b" " * 65535)
    yield "npy_header_code", dict(base, samples=npy_forged((3, 3, 6), "__import__('os').system('x')"))


def _raw_members(base):
    """``{name: .npy bytes}`` for arrays (non-bytes values are encoded)."""
    return {k: v if isinstance(v, bytes) else npy(v) for k, v in base.items()}


def _byte_cases(valid_path):
    with open(valid_path, "rb") as f:
        data = f.read()
    with zipfile.ZipFile(valid_path) as z:
        info = z.getinfo("samples.npy")
    # A byte inside samples' compressed stream: zlib error or CRC mismatch.
    name_len, extra_len = struct.unpack("<HH", data[info.header_offset + 26:info.header_offset + 30])
    start = info.header_offset + 30 + name_len + extra_len
    for k, at in enumerate((start + 2, start + info.compress_size // 2, start + info.compress_size - 2)):
        flipped = bytearray(data)
        flipped[at] ^= 0xFF
        yield f"flipped_byte_{k}", bytes(flipped)
    for frac in (0.1, 0.5, 0.9, 0.99):
        yield f"truncated_{int(frac * 100)}pct", data[: int(len(data) * frac)]
    yield "pk_only", b"PK"
    yield "pk_garbage", b"PK\x03\x04" + os.urandom(200)
    yield "empty_zip", _empty_zip()


def _empty_zip():
    buf = io.BytesIO()
    zipfile.ZipFile(buf, "w").close()
    return buf.getvalue()


def generate(folder, *, bomb=True):
    """Write every hostile case into ``folder``; returns ``[(name, path)]``.

    ``bomb=False`` leaves out the 4 GiB zip bomb (it takes a few seconds of CPU to build).
    """
    folder = os.fspath(folder)
    os.makedirs(folder, exist_ok=True)
    valid_path, base = _valid_members(folder)
    out = []
    for name, members in list(_header_cases(base)) + list(_array_cases(base)):
        path = os.path.join(folder, name + ".npz")
        write_zip(path, _raw_members(members))
        out.append((name, path))
    for name, data in _byte_cases(valid_path):
        path = os.path.join(folder, name + ".npz")
        with open(path, "wb") as f:
            f.write(data)
        out.append((name, path))
    if bomb:
        path = os.path.join(folder, "zip_bomb_4gib.npz")
        _zip_bomb(path, _raw_members(base))
        out.append(("zip_bomb_4gib", path))
    return out


if __name__ == "__main__":
    for name, path in generate(sys.argv[1] if len(sys.argv) > 1 else "hostile"):
        print(f"{name}\t{path}\t{os.path.getsize(path)}")
