"""What one rank of the fleet job does on its own: measure its node, save its file (or its error
file) the moment it is done, and, in a re-run, read the file of a node it does not measure again."""

from __future__ import annotations

import contextlib
import json
import os
import socket

from corelat._fleet import nodes as _fleet
from corelat._fleet.nodes import ERROR_SUFFIX
from corelat._results.fleet import write_bytes
from corelat._results.latency import LatencyResult, thaw
from corelat._system import sysinfo as _sysinfo
from corelat._system.sysinfo import collect


def _save_result(result, directory, node, rank, run=None):
    """``DIR/<node>.npz``, atomically; returns the path. The file records the run (its id, the Slurm
    job id, when it started) so that a report of the folder tells it from other runs' files."""

    md = thaw(result.metadata)
    md["fleet"] = {"node": node, "rank": rank, "microcode": _sysinfo.microcode(),
                   "job": os.environ.get("SLURM_JOB_ID") or os.environ.get("PMI_ID"), **(run or {})}
    result = LatencyResult(cpus=result.cpus, kernel=result.kernel, samples=result.samples, metadata=md,
                           name=node, flags=result.flags, extras=dict(result.extras))
    if directory is None:
        return result, ""
    path = os.path.join(directory, node + ".npz")
    result.save(path)  # atomic: a job killed meanwhile leaves the old file or none, never half a file
    stale = os.path.join(directory, node + ERROR_SUFFIX)
    if os.path.exists(stale):
        os.unlink(stale)
    return result, path


def _save_error(directory, node, rank, error, run=None):
    if directory is None:
        return

    d = {"format": "corelat", "kind": "fleet-node-error", "version": 1, "node": node, "rank": rank,
         "error": error, "hostname": socket.gethostname(), "date": collect()["date"], **(run or {})}
    write_bytes(os.path.join(directory, node + ERROR_SUFFIX), json.dumps(d, indent=1).encode())


def _kept(directory, node):
    """A re-run's (NodeData or None, error or None) of a node it does not measure again: its file
    of the earlier run; None where there is none (then it is measured)."""
    path = os.path.join(directory, node + ".npz")
    if not os.path.exists(path):
        error_path = os.path.join(directory, node + ERROR_SUFFIX)
        if not os.path.exists(error_path):
            return None
        try:
            return None, _fleet.read_error_file(error_path)[1]
        except (OSError, ValueError, UnicodeDecodeError, RecursionError) as e:
            return None, f"unreadable error file ({e})"
    try:
        nd = _fleet.read_node_file(path, node)
    except Exception as e:  # noqa: BLE001 - its node's error
        return None, f"{type(e).__name__}: {e}"
    return (nd, None) if nd is not None else (None, f"{path} holds another kind of result")


def _measure_node(measure, directory, node, rank, run=None):
    """(NodeData or None, error text or None)."""
    try:
        result = measure(node)
        try:
            result, path = _save_result(result, directory, node, rank, run)
        except Exception as e:  # noqa: BLE001 - a full disk: the node is measured all the same
            nd = _fleet.summarize(result, node=node)
            nd.meta["save_error"] = f"{type(e).__name__}: {e}"
            with contextlib.suppress(Exception):  # the folder says so too, where a small file still fits
                _save_error(directory, node, rank, f"measured, but its file could not be written "
                                                   f"({nd.meta['save_error']})", run)
            return nd, None
        return _fleet.summarize(result, node=node, file=path), None
    except KeyboardInterrupt:
        raise
    except Exception as e:  # noqa: BLE001 - a node's failure is reported, the fleet goes on
        error = f"{type(e).__name__}: {e}"
        try:
            _save_error(directory, node, rank, error, run)
        except Exception as e2:  # noqa: BLE001
            error += f" (and its error file could not be written: {e2})"
        return None, error
