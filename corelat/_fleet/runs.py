"""Which run a fleet folder's files belong to: a folder re-used for another run keeps the old files.

``corelat fleet`` writes into each node's file (and error file) the run's id, the Slurm job id where
there is one, and the date. :func:`folder_run` finds the run a folder's report is about: the run of
its ``fleet.json``, else the run of its newest node file. Files of other runs (and, once the folder
has a run, files without one) are named in the report and left out unless asked for.
"""

from __future__ import annotations

import datetime
import json
import os
import secrets

from corelat._core import files as _files
from corelat._core import npz as _npz

#: Largest fleet.json whose run id is read (its metadata comes first, the rest is not parsed twice).
_MAX_REPORT = 256 << 20


def new_run(includes=()):
    """A new run's record: ``{"run": id, "job": Slurm job id or None, "started": ISO date}``, and
    ``"includes"``: the runs whose files a re-run keeps (``corelat fleet --rerun``)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    run = {"run": now.strftime("%Y%m%dT%H%M%SZ-") + secrets.token_hex(3),
           "job": os.environ.get("SLURM_JOB_ID"), "started": now.isoformat(timespec="seconds")}
    if includes:
        run["includes"] = list(includes)
    return run


def _ids(run):
    """(the run's id, the ids of the runs it includes) of a run record, or None."""
    if not isinstance(run, dict) or not run.get("run"):
        return None
    more = run.get("includes")
    return (str(run["run"]), *(str(x) for x in more)) if isinstance(more, list) else (str(run["run"]),)


def _report_run(path):
    try:
        d = json.loads(_files.read_bytes(path, _MAX_REPORT).decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return None
    md = d.get("metadata") if isinstance(d, dict) else None
    return _ids(md.get("run")) if isinstance(md, dict) else None


def _file_run(path):
    if path.endswith(".npz"):
        try:
            header, _ = _npz.read(path, only=())
        except Exception:  # noqa: BLE001 - a forged file: its node's error, found when it is read
            return None
        return _ids((header.get("metadata") or {}).get("fleet"))
    try:
        d = json.loads(_files.read_bytes(path, 1 << 20).decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return None
    return _ids(d)


def folder_run(folder, paths, report_name):
    """The runs a folder's report is about: (id, ids of the runs it includes) of its newest file that
    names one (the report or a node's file), or None."""
    report = os.path.join(folder, report_name)
    stamped = []
    for p in [*paths, report]:
        try:
            stamped.append((os.stat(p).st_mtime_ns, p))
        except OSError:
            continue
    for _, p in sorted(stamped, reverse=True)[:8]:  # the newest files: the last run's
        run = _report_run(p) if p == report else _file_run(p)
        if run:
            return run
    return None
