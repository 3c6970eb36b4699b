"""The fleet job's messages between ranks: JSON headers plus raw arrays (no pickle), and
point-to-point sends and receives with deadlines, so that no wait blocks forever on another rank."""

from __future__ import annotations

import json
import time

import numpy as np

from corelat._fleet.nodes import NodeData

_ARRAY_DTYPES = ("<f8", "|i1")


# -- messages ---------------------------------------------------------------------------------------------
def pack(header, arrays=()):
    """bytes: an 8-byte length, a JSON header, then the arrays' raw bytes."""
    parts = [np.ascontiguousarray(a) for a in arrays]
    header = dict(header, _arrays=[[a.dtype.str, list(a.shape)] for a in parts])
    hb = json.dumps(header).encode("utf-8")
    return len(hb).to_bytes(8, "big") + hb + b"".join(a.tobytes() for a in parts)


def unpack(buf):
    """(header, [arrays]) from :func:`pack`'s bytes; ValueError if they are not such a message."""
    buf = memoryview(buf)
    n = int.from_bytes(buf[:8], "big")
    if n > len(buf) - 8:
        raise ValueError("truncated message")
    header = json.loads(bytes(buf[8:8 + n]).decode("utf-8"))
    off, arrays = 8 + n, []
    for dt, shape in header.pop("_arrays", []):
        if dt not in _ARRAY_DTYPES:
            raise ValueError(f"unexpected array type {dt!r}")
        dtype = np.dtype(dt)
        count = int(np.prod(shape))
        if off + count * dtype.itemsize > len(buf):
            raise ValueError("truncated message")
        arrays.append(np.frombuffer(buf, dtype, count, off).reshape(shape).copy())
        off += count * dtype.itemsize
    return header, arrays


def summary_message(nd, rank, error=None, node=None):
    """The message a measuring rank sends rank 0: its :class:`NodeData`, or its error."""
    if nd is None:
        return pack({"node": node, "rank": rank, "error": error})
    arrays = [nd.median] + ([nd.codes.astype(np.int8)] if nd.codes is not None else [])
    return pack({"node": nd.node, "rank": rank, "error": None, "cpus": list(nd.cpus), "kernel": nd.kernel,
                 "meta": nd.meta, "file": nd.file}, arrays)


def read_summary(buf):
    """(header, NodeData or None) from :func:`summary_message`'s bytes."""
    h, arrays = unpack(buf)
    if h.get("error") is not None:
        return h, None
    nd = NodeData(node=str(h["node"]), cpus=tuple(int(c) for c in h["cpus"]), kernel=str(h["kernel"]),
                  median=arrays[0], meta=h["meta"], codes=arrays[1] if len(arrays) > 1 else None,
                  file=h.get("file", ""))
    return h, nd


# -- bounded waiting ----------------------------------------------------------------------------------------
def nap(k):
    time.sleep(min(0.001 * 2 ** min(k, 6), 0.05))


class Link:
    """Point-to-point messages with deadlines over one communicator."""

    def __init__(self, MPI, comm):
        self.MPI, self.comm = MPI, comm
        self._out = []  # (request, buffer): buffers stay alive until sent

    def send(self, data, dest, tag):
        buf = bytearray(data)
        req = self.comm.Isend([buf, self.MPI.BYTE], dest=dest, tag=tag)
        self._out.append((req, buf))
        return req

    def poll(self, tag, source=None):
        """(source, bytes) of one waiting message, or None."""
        st = self.MPI.Status()
        src = self.MPI.ANY_SOURCE if source is None else source
        if not self.comm.Iprobe(source=src, tag=tag, status=st):
            return None
        buf = bytearray(st.Get_count(self.MPI.BYTE))
        self.comm.Recv([buf, self.MPI.BYTE], source=st.Get_source(), tag=tag)
        return st.Get_source(), bytes(buf)

    def recv(self, tag, source, deadline):
        k = 0
        while True:
            got = self.poll(tag, source)
            if got is not None:
                return got[1]
            if time.monotonic() > deadline:
                return None
            self.flush()
            nap(k)
            k += 1

    def flush(self):
        self._out = [(r, b) for r, b in self._out if not r.Test()]
        return not self._out

    def barrier(self, deadline, idle=None):
        """True once every rank reached the barrier; False at ``deadline``. ``idle()`` runs while waiting."""
        req = self.comm.Ibarrier()
        k = 0
        while not req.Test():
            if idle is not None:
                idle()
            self.flush()
            if time.monotonic() > deadline:
                return False
            nap(k)
            k += 1
        return True
