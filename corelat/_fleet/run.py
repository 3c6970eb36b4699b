"""Measuring a fleet over MPI: every node of the job measures itself once; rank 0 writes the report.

The job, in phases (every wait is bounded; none blocks forever on another rank):

1. **Join.** Ranks send rank 0 their node name (``MPI.Get_processor_name()``, or
   ``CORELAT_NODE_NAME``); rank 0 waits :data:`JOIN_TIMEOUT` seconds for all of them (else it names
   the ranks that did not start and ends the job) before any collective is entered. Then ranks find
   who shares their machine (``Split_type(COMM_TYPE_SHARED)``, guarded by a watchdog), tell rank 0,
   and rank 0 sends each rank its role.
2. **Measure.** The lowest rank of each node measures; the other ranks of the node only wait. Node
   names that share one machine (containers, tests) take turns, so two measurements never share a
   machine. A measuring rank saves ``DIR/<node>.npz`` the moment it is done (or
   ``DIR/<node>.error.json`` when its measurement fails) and sends rank 0 its summary.
3. **Report.** Rank 0 adds the summaries to the streaming analysis as they come, until every node has
   reported or the stated time-out passes; then it writes ``DIR/fleet.json`` and prints the report.
   Nodes that did not report are named; the job then ends with MPI_Abort, so no rank is left hanging.
4. **Leave.** All ranks meet in a non-blocking barrier, with a time-out too.

Messages are JSON headers plus raw arrays (no pickle).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import socket
import sys
import time
from typing import Any

from corelat._core.errors import InputError
from corelat._core.types import Nodes, Path
from corelat._fleet import folderlock as _folderlock
from corelat._fleet import hostlist as _hostlist
from corelat._fleet.folderlock import LOCK_NAME  # noqa: F401 - tests
from corelat._fleet.hostlist import expected_nodes
from corelat._fleet.messages import Link, nap, pack, read_summary, summary_message, unpack
from corelat._fleet.mpistart import ABORT_GRACE  # noqa: F401 - tests set it
from corelat._fleet.mpistart import EXIT_TIMEOUT, _say, _watchdog, given_name, mpi, node_name
from corelat._fleet.noderun import _kept, _measure_node, _save_error, _save_result  # noqa: F401 - tests
from corelat._fleet.nodes import ERROR_SUFFIX, REPORT_NAME, FleetBuilder
from corelat._fleet.runs import new_run
from corelat._fleet.terminating import _Terminated, _terminating, deferred
from corelat._fleet.verdict import write_prometheus
from corelat._measure import sweep as _sweep
from corelat._measure.options import SweepOptions, sweep_keywords
from corelat._results.fleet import FleetResult
from corelat._system.validate import DEFAULT_MAX_TIME_PER_PAIR, allowed_cpus, resolve_cpus

TAG_HELLO, TAG_PLAN, TAG_TURN, TAG_SUMMARY, TAG_GO, TAG_MACHINE = 7301, 7302, 7303, 7304, 7305, 7306
TAG_RETEST, TAG_RETESTED = 7307, 7308
#: Seconds rank 0 waits for every rank to join (and the ranks for rank 0's answer).
JOIN_TIMEOUT = 120.0
#: Seconds past the measuring wait the ranks give rank 0 to write the report before they end the job.
LEAVE_GRACE = 30.0


def _abort(comm, message, code=EXIT_TIMEOUT):
    _say(message)
    comm.Abort(code)


# -- the job ------------------------------------------------------------------------------------------------
def _plan(hellos, wait, per_node=False):
    """{rank: role} from {rank: hello}: node leaders, turns on a shared machine, all node names.
    ``wait`` bounds the whole job's measuring; ``per_node`` (a default wait, the time one node may
    take) makes it that many times longer as node names share a machine and take turns."""
    by_node = {}
    for rank in sorted(hellos):
        h = hellos[rank]
        by_node.setdefault((h["machine"], h["name"], h.get("given", h["name"])), []).append(rank)
    names, notes = _hostlist.unique_names(by_node)
    turns = {}
    for (machine, *_names), ranks in by_node.items():
        turns.setdefault(machine, []).append(ranks[0])
    per_machine = max(len(t) for t in turns.values())
    roles = {}
    for key, ranks in by_node.items():
        order = sorted(turns[key[0]])
        for r in ranks:
            leader = r == ranks[0]
            k = order.index(ranks[0])
            roles[r] = {"node": names[key], "leader": leader,
                        "prev": order[k - 1] if leader and k > 0 else None,
                        "next": order[k + 1] if leader and k + 1 < len(order) else None,
                        "wait": wait * per_machine if per_node else wait, "per_machine": per_machine}
    leaders = {ranks[0]: names[key] for key, ranks in by_node.items()}
    for role in roles.values():
        role["root"] = roles[0]["node"]
    return roles, leaders, notes


def run(comm, measure, directory=None, wait=3600.0, *, expect=None, join_timeout=JOIN_TIMEOUT, out=None,
        log=None, wait_per_node=False, only=None, includes=(), prometheus=None):
    """Run the fleet job on ``comm``; ``measure(node) -> LatencyResult`` measures this machine.

    Returns the :class:`~corelat.FleetResult` on rank 0, None on the other ranks. Ends the job
    (MPI_Abort) when a rank does not answer within its time-out: every rank is gone at most
    ``join_timeout`` (joining) + ``wait`` (measuring and reporting) + ``min(join_timeout,
    LEAVE_GRACE)`` (leaving) after it started. ``wait_per_node``: ``wait`` is one node's time, and
    node names that share a machine (and take turns) get it each. ``only``: re-run just these
    nodes; the others' files in ``directory`` (of the runs ``includes`` names) go into the report.
    ``prometheus``: a file rank 0 writes the verdict to (node_exporter's textfile collector) with
    ``fleet.json``, before it ends a job whose nodes did not all report.
    """
    job = _Job(comm, directory, wait, join_timeout,
               log or (lambda text: (sys.stderr.write(text + "\n"), sys.stderr.flush())))
    job.per_node, job.only, job.includes = wait_per_node, only, tuple(includes)
    job.prometheus = prometheus
    try:
        with _terminating(job.rank == 0):
            try:
                job.join()
                job.plan()
                builder = job.measure(measure) if job.role["leader"] else None
                result = job.report(builder, expect, out) if job.rank == 0 else None
            except _Terminated:
                job.terminated(expect, out)
                raise
        job.leave()
    finally:
        job.unlock()
    return result


class _Job:
    """One rank's part in the fleet job, phase by phase (see the module documentation)."""

    def __init__(self, comm, directory, wait, join_timeout, log):
        self.MPI = mpi()
        self.comm, self.directory, self.wait = comm, directory, wait
        self.join_timeout, self.log = join_timeout, log
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.link = Link(self.MPI, comm)
        self.name = node_name(self.MPI)
        self.folder_error = None
        if directory is not None:
            try:
                os.makedirs(directory, exist_ok=True)
            except OSError as e:  # this node reports it; the job goes on
                self.folder_error = f"cannot create the folder {directory}: {e.strerror or e}"
        self.hello = {"rank": self.rank, "name": self.name, "host": socket.gethostname(), "pid": os.getpid(),
                      "given": given_name(self.MPI)}
        self.hellos = {0: self.hello}  # rank 0: every rank's hello
        self.role, self.leaders, self.notes = {}, {}, []
        self.t_plan = self.total_wait = 0.0
        self.per_node, self.only, self.includes = False, None, ()
        self.prometheus = None
        self.lock_fd = None
        self.builder, self.pending = None, None  # rank 0: the report so far, the nodes yet to report
        self.node = self.name

    def _abort(self, message):
        _abort(self.comm, message)

    def join(self):
        """1. join: rank 0 hears from every rank before any collective, so it can name who is missing."""
        t_join, jt = time.monotonic(), self.join_timeout
        if self.rank == 0:
            self.hellos = _gather(self.link, TAG_HELLO, self.size, self.hellos, t_join + jt)
            if len(self.hellos) < self.size:
                absent = sorted(set(range(self.size)) - set(self.hellos))
                self._not_started(absent, jt)
                self._abort(f"not every rank joined: rank(s) {_ranks(absent)} of {self.size} did not start "
                            f"corelat fleet within {jt:g} s (no node name known for them; the others: "
                            f"{', '.join(sorted({h['name'] for h in self.hellos.values()}))})")
            refused = self._lock_folder()
            for r in range(1, self.size):
                self.link.send(b"go" if refused is None else pack({"refused": refused}), r, TAG_GO)
            if refused is not None:  # every rank ends with bad input, nothing measured
                deadline = time.monotonic() + jt
                while not self.link.flush() and time.monotonic() < deadline:
                    nap(3)
                raise InputError(refused)
        else:
            self.link.send(pack(self.hello), 0, TAG_HELLO)
            go = self.link.recv(TAG_GO, 0, t_join + 2 * jt)
            if go is None:
                self._abort(f"rank {self.rank} ({self.name}): not every rank joined; no answer from rank 0 "
                            f"within {2 * jt:g} s")
            if go != b"go":
                raise InputError(f"rank {self.rank} ({self.name}): the job was refused by rank 0: "
                                 f"{unpack(go)[0].get('refused')}")

    def _not_started(self, absent, jt):
        """The Prometheus file of a job that ends before it is planned: nothing measured, the ranks
        that did not join named (``rankN``: they never said their node's name), the others not
        measured. Only that file: the folder is not this job's until it is locked."""
        if not self.prometheus:
            return
        builder = FleetBuilder(name="fleet")
        for r in absent:
            builder.add_error(f"rank{r}", f"did not start corelat fleet within {jt:g} s")
        for name in sorted({h["name"] for h in self.hellos.values()}):
            builder.add_error(name, "not measured: the job ended before it was planned (a rank did not join)")
        result = builder.finish(metadata={"source": "mpi", "ranks": self.size, "partial": "not started"})
        try:
            _prometheus(result, os.fspath(self.prometheus))
        except (OSError, ValueError) as e:
            self.log(f"corelat fleet: error: cannot write {self.prometheus}: {e}")

    def _lock_folder(self):
        """Take the folder for this job (rank 0): None, or why not (see :func:`folderlock.take`)."""
        if self.directory is None or self.folder_error is not None:
            return None
        self.lock_fd, refused = _folderlock.take(self.directory)
        return refused

    def unlock(self):
        """Let go of the folder (the job is over on this rank)."""
        fd, self.lock_fd = self.lock_fd, None
        _folderlock.release(self.directory, fd)

    def _machine(self):
        """The lowest rank of the ranks that share this machine (a collective, under a watchdog)."""
        late = (f"rank {self.rank} ({self.name}): MPI_Comm_split_type took more than {self.join_timeout:g} s "
                "(a rank ended after joining)")
        with _watchdog(self.join_timeout, late):
            shm = self.comm.Split_type(self.MPI.COMM_TYPE_SHARED, key=self.rank)
        ranks = shm.Get_group().Translate_ranks(list(range(shm.Get_size())), self.comm.Get_group())
        machine = int(min(ranks))
        shm.Free()
        return machine

    def plan(self):
        """Who shares which machine; rank 0 sends every rank its role."""
        machine = self._machine()
        t_machine, jt = time.monotonic(), self.join_timeout
        if self.rank == 0:
            self._plan_roles(machine, t_machine + jt)
        else:
            self.link.send(pack({"rank": self.rank, "machine": machine}), 0, TAG_MACHINE)
            got = self.link.recv(TAG_PLAN, 0, t_machine + 2 * jt)
            if got is None:
                self._abort(f"rank {self.rank} ({self.name}): no answer from rank 0 within {2 * jt:g} s")
            self.role, _ = unpack(got)
        self.t_plan = time.monotonic()
        self.total_wait = float(self.role["wait"])
        self.node = self.role["node"]

    def _plan_roles(self, machine, deadline):
        hellos = self.hellos
        hellos[0]["machine"] = machine
        got = _gather(self.link, TAG_MACHINE, self.size, {0: {"machine": machine}}, deadline)
        if len(got) < self.size:
            absent = sorted(set(range(self.size)) - set(got))
            self._abort(f"node(s) {', '.join(hellos[r]['name'] for r in absent)} (rank(s) {_ranks(absent)}) "
                        f"did not say which machine they are on within {self.join_timeout:g} s; "
                        "ending the job")
        for r, h in got.items():
            hellos[r]["machine"] = int(h["machine"])
        roles, self.leaders, self.notes = _plan(hellos, self.wait, self.per_node)
        run = new_run(self.includes)
        for role in roles.values():
            role["run"] = run
        self._write_manifest(run)
        for r in range(1, self.size):
            self.link.send(pack(roles[r]), r, TAG_PLAN)
        self.role = roles[0]
        self.log(f"corelat fleet: {len(self.leaders)} node(s) on {self.size} rank(s); waiting at most "
                 f"{self.role['wait']:.0f} s for their results")

    def _write_manifest(self, run):
        """Before any node is measured, the folder says who this run is to measure: an error file per
        node (each node's result replaces its own) and a ``fleet.json`` of this run that names them. A
        job killed before its report leaves a folder that says it is incomplete, never an earlier
        run's report that says OK (nor only the files of the nodes that were done, that say OK too)."""
        if self.directory is None or self.folder_error is not None:
            return
        job = f" (Slurm job {run['job']})" if run.get("job") else ""
        why = (f"no result: planned in run {run['run']}{job}, but the job ended before this node reported "
               "(killed or cancelled), or is still running")
        builder = FleetBuilder(name=os.path.basename(os.path.normpath(self.directory)))
        try:
            for rank, node in sorted(self.leaders.items()):
                if self.only is not None and node not in self.only and _has_file(self.directory, node):
                    continue  # a re-run keeps this node's file as it is
                _save_error(self.directory, node, rank, why, run)
                builder.add_error(node, why)
            planned = builder.finish(metadata={"source": "mpi", "ranks": self.size, "run": run,
                                               "directory": self.directory, "partial": "planned"})
            planned.save(os.path.join(self.directory, REPORT_NAME))
        except (OSError, ValueError) as e:  # the job goes on: its report says what could not be written
            self.log(f"corelat fleet: warning: cannot write the run's plan into {self.directory}: {e}")

    def terminated(self, expect, out):
        """Rank 0 was sent SIGTERM: the report of what came so far, written and printed, the nodes
        that did not report named as such; then the job ends (128 + SIGTERM)."""
        code = 128 + signal.SIGTERM
        if not self.leaders:  # not planned yet: nothing to report
            _abort(self.comm, "ended by SIGTERM before the job was planned; nothing written", code)
            return
        builder, pending = self.builder, self.pending
        if builder is None:  # rank 0 was measuring its own node
            builder = self._new_builder()
            pending = dict(self.leaders)
        elif pending is None:
            pending = {r: n for r, n in self.leaders.items() if r != 0}
        with contextlib.suppress(Exception):  # what reached rank 0 already is taken
            while pending:
                got = self.link.poll(TAG_SUMMARY)
                if got is None:
                    break
                self._take_summary(builder, pending, *got)
        reasons = {n: f"the job was ended by SIGTERM (scancel, or the launcher) before rank {r} reported"
                   for r, n in pending.items()}
        result = builder.finish(expect=expect, missing_reasons=reasons,
                                metadata={"source": "mpi", "ranks": self.size, "directory": self.directory,
                                          "wait_s": self.total_wait, "run": self.role.get("run"),
                                          "partial": "SIGTERM"})
        result = self._write_outputs(result)
        with contextlib.suppress(OSError, ValueError):
            print(result.describe(), file=out or sys.stdout, flush=True)
        _abort(self.comm, f"ended by SIGTERM: the partial report names {len(pending)} node(s) that had not "
                          "reported", code)

    def _new_builder(self):
        directory = self.directory
        builder = FleetBuilder(name=os.path.basename(os.path.normpath(directory)) if directory else "fleet")
        for text in self.notes:
            builder.note(text)
        return builder

    def _turn_error(self):
        """Why this node is not measured (its turn on a shared machine never came, its folder), or None."""
        role = self.role
        deadline = self.t_plan + self.total_wait
        if role["prev"] is not None and self.link.recv(TAG_TURN, role["prev"], deadline) is None:
            error = (f"not measured: another node on this machine (rank {role['prev']}) did not finish "
                     f"within {self.total_wait:g} s")
            with contextlib.suppress(Exception):  # on disk too: fleet-report says why, whatever rank 0 does
                folder = self.directory if self.folder_error is None else None
                _save_error(folder, self.node, self.rank, error, self.role.get("run"))
            return error
        return self.folder_error

    def measure(self, measure):
        """2. measure (node leaders, one after another on a shared machine); rank 0 returns its
        report builder with its own node in it."""
        self.measure_fn = measure
        nd, error = None, self._turn_error()
        kept = None if self.only is None or self.node in self.only else _kept(self.directory, self.node)
        if kept is not None:
            nd, error = kept
        elif error is None:
            nd, error = _measure_node(measure, self.directory, self.node, self.rank, self.role.get("run"))
        if self.role["next"] is not None:
            self.link.send(b"turn", self.role["next"], TAG_TURN)
        if self.rank != 0:
            self.link.send(summary_message(nd, self.rank, error, self.node), 0, TAG_SUMMARY)
            return None
        builder = self.builder = self._new_builder()
        _take(builder, nd, error, self.node)
        return builder

    def _collect(self, builder):
        """The summaries of the other nodes, until all came or the wait is over; the missing ones."""
        pending = self.pending = {r: n for r, n in self.leaders.items() if r != 0}
        deadline = self.t_plan + self.total_wait
        k = 0
        while pending and time.monotonic() < deadline:
            got = self.link.poll(TAG_SUMMARY)
            if got is None:
                self.link.flush()
                nap(k)
                k += 1
                continue
            k = 0
            self._take_summary(builder, pending, *got)
        return pending

    @staticmethod
    def _take_summary(builder, pending, src, data):
        try:
            h, nd = read_summary(data)
            _take(builder, nd, h.get("error"), h.get("node") or pending.get(src, f"rank{src}"))
        except (ValueError, KeyError, TypeError) as e:
            with deferred():
                builder.add_error(pending.get(src, f"rank{src}"), f"unreadable summary from rank {src} ({e})")
        pending.pop(src, None)

    def report(self, builder, expect, out):
        """3. report (rank 0): collect, print, save; end the job when a node did not report."""
        pending = self._collect(builder)
        if not pending:
            self._retest(builder)
        total_wait, directory = self.total_wait, self.directory
        reasons = {n: (f"no result within {total_wait:g} s (rank {r} on {self.hellos[r]['host']}: still "
                       f"measuring, hung or dead)") for r, n in pending.items()}
        result = builder.finish(expect=expect, missing_reasons=reasons,
                                metadata={"source": "mpi", "ranks": self.size, "directory": directory,
                                          "wait_s": total_wait, "run": self.role.get("run")})
        # Every output is written before the job may be ended for a node that did not report
        # (MPI_Abort): a hung node is exactly when the monitoring needs its file.
        result = self._write_outputs(result)
        print(result.describe(), file=out or sys.stdout, flush=True)
        if pending:
            self._abort(f"node(s) {', '.join(pending.values())} did not report within {total_wait:g} s; "
                        "ending the job")
        return result

    def _write_outputs(self, result):
        """Save ``fleet.json`` and the Prometheus file; the result, with an error for each file that
        could not be written (a full disk is a failed run, in the report, the file and the exit status)."""
        report = None if self.directory is None else os.path.join(self.directory, REPORT_NAME)
        paths = [(report, FleetResult.save)] if report else []
        paths += [(os.fspath(self.prometheus), _prometheus)] if self.prometheus else []
        written, failed = [], []
        for path, save in paths:
            try:
                save(result, path)
                written.append((path, save))
            except (OSError, ValueError) as e:  # the report is printed; the other ranks still get to leave
                self.log(f"corelat fleet: error: cannot write {path}: {e}")
                failed.append({"node": os.path.basename(path), "file": path,
                               "error": f"the job's report {path} could not be written ({e})"})
        if not failed:
            return result
        result = dataclasses.replace(result, errors=(*result.errors, *failed))
        for path, save in written:  # the files that were written say so too
            with contextlib.suppress(OSError, ValueError):
                save(result, path)
        return result

    def _retest(self, builder):
        """Re-test before blame: each node flagged as an outlier is measured again, one at a time (no
        two measurements share a machine), while the wait lasts; its record keeps both attempts, its
        file the second (so that the folder gives the same report)."""
        deadline, ranks = self.t_plan + self.total_wait, {n: r for r, n in self.leaders.items()}
        flagged = builder.flagged()
        # A re-run (--only) measures just the nodes it was asked for: a file kept from the earlier run
        # is judged as it is, never measured again behind the user's back.
        kept = [n for n in flagged if self.only is not None and n not in self.only]
        first = [n for n in flagged if n not in kept]
        for node in kept:
            builder.note(f"re-test before blame: {node} is an outlier in the file kept from the earlier run; "
                         "not measured again (this re-run measures only the nodes --only names)")
        for node in first:
            r = ranks.get(node)
            if r is None or time.monotonic() >= deadline:
                continue
            if r == 0:
                nd, error = _measure_node(self.measure_fn, self.directory, node, 0, self.role.get("run"))
            else:
                self.link.send(b"retest", r, TAG_RETEST)
                data = self.link.recv(TAG_RETESTED, r, deadline)
                h, nd = read_summary(data) if data is not None else ({"error": "no answer in time"}, None)
                error = h.get("error")
            builder.retest(node, nd, error)
        still = set(builder.flagged())
        for node in first:
            builder.note(f"re-test before blame: {node} " + ("still an outlier" if node in still else
                         "no longer an outlier") + " when measured again (both attempts in its record)")

    def _serve_retest(self):
        """A node leader waiting to leave measures its node again when rank 0 asks (re-test)."""
        if self.role.get("leader") and self.rank != 0 and self.link.poll(TAG_RETEST, 0) is not None:
            run = self.role.get("run")
            nd, error = _measure_node(self.measure_fn, self.directory, self.node, self.rank, run)
            self.link.send(summary_message(nd, self.rank, error, self.node), 0, TAG_RETESTED)

    def leave(self):
        """4. leave: all ranks meet in a non-blocking barrier, with a time-out too."""
        if not self.link.barrier(self.t_plan + self.total_wait + min(self.join_timeout, LEAVE_GRACE),
                                 idle=self._serve_retest):
            who = ("a rank" if self.rank == 0
                   else f"rank 0 ({self.role['root']}, which writes the report) or another rank")
            self._abort(f"rank {self.rank} ({self.node}): the job did not finish within its time-out: {who} "
                        "did not reach the end")


def _gather(link, tag, size, have, deadline):
    """{rank: header} of one message ``tag`` from every rank (``have``: those known already), until
    ``deadline``."""
    have = dict(have)
    while len(have) < size and time.monotonic() < deadline:
        got = link.poll(tag)
        if got is None:
            link.flush()
            nap(3)
            continue
        h, _ = unpack(got[1])
        have[int(got[0])] = h
    return have


def _ranks(ranks):
    return ", ".join(map(str, ranks[:20])) + (" ..." if len(ranks) > 20 else "")


def _has_file(directory, node):
    return any(os.path.exists(os.path.join(directory, node + end)) for end in (".npz", ERROR_SUFFIX))


def _prometheus(result, path):
    write_prometheus(result, path)


def _take(builder, nd, error, node):
    with deferred():
        if nd is None:
            builder.add_error(node, error or "unknown error")
        elif nd.meta.get("save_error"):  # the folder would not know the node: it is a failure of the run
            builder.add_error(node, f"measured, but its file could not be written ({nd.meta['save_error']}); "
                                    "left out of the report")
        else:
            builder.add(nd)


def default_wait(cpus_count, samples=None, max_time_per_pair=None, round_trips=1000):
    """Seconds to wait for a node's measurement: its worst-case sweep time, plus re-tests and a margin.

    Precision-driven sweeps (``samples=None``) stop each pair at ``max_time_per_pair``; fixed-size
    sweeps (an integer ``samples``) are costed at
    2 µs per round trip (slower than any machine measured so far). Plus 10 % re-tests and 5 minutes.
    """

    pairs = max(cpus_count * (cpus_count - 1) // 2, 1)
    per_pair = (samples * 1.1 * round_trips * 2e-6 if samples is not None
                else (max_time_per_pair or DEFAULT_MAX_TIME_PER_PAIR))
    return pairs * per_pair * 1.1 + 300.0


def _options_wait(options):
    """:func:`default_wait` for ``options`` (requested, not resolved) on this node."""
    try:
        count = len(resolve_cpus(options.cpus))
    except ValueError:
        count = len(allowed_cpus())
    return default_wait(count, options.samples, options.max_time_per_pair, options.round_trips)


@sweep_keywords(omit=("name",),
                refused={"name": "measure_fleet names each result after its node; do not pass name"})
def measure_fleet(comm: Any = None, directory: Path | None = None, *, expect: Nodes | None = None,
                  wait: float | None = None, **options: Any) -> FleetResult | None:
    """Measure every node of an MPI job and compare them (run it on every rank).

    The keywords of :func:`corelat.measure` but ``name`` (each result is named after its node) are
    checked on every rank first and measure every node; ``cpus`` and ``home`` are read on each node
    (a node that cannot meet them reports the error, the fleet goes on).

    Parameters
    ----------
    comm : mpi4py communicator, optional
        The ranks taking part (default ``MPI.COMM_WORLD``). Ranks are grouped by node; the lowest
        rank of each node measures it with :func:`corelat.measure`, the others wait.
    directory : path, optional
        Where each node saves ``<node>.npz`` the moment it is done (``<node>.error.json`` when its
        measurement fails) and rank 0 writes ``fleet.json``. None keeps nothing on disk.
    expect : str, path or list, optional
        Nodes that should take part (see :func:`corelat.fleet`).
    wait : float, optional
        Seconds rank 0 waits for the nodes' results before it names the missing ones and ends the
        job (default: :func:`default_wait` for this node's CPU count).

    Returns
    -------
    FleetResult or None
        The fleet report on rank 0, None on the other ranks.

    Raises
    ------
    InputError
        For a bad ``expect`` list or a bad measuring option (on every rank, before anything is
        measured).
    MissingDependencyError
        Where ``mpi4py`` is not installed (the message says how to install it).

    Examples
    --------
    In a script started with ``mpirun -n 64 python script.py``, one rank per node or more:

    >>> import corelat
    >>> fleet = corelat.measure_fleet(directory="results", expect="node[01-64]")  # doctest: +SKIP
    >>> if fleet is not None:  # rank 0  # doctest: +SKIP
    ...     print(fleet)
    """
    MPI = mpi()  # a script that calls this has imported mpi4py (and so run MPI_Init) already, mostly
    if comm is None:
        comm = MPI.COMM_WORLD
    expect = expected_nodes(expect)  # a bad list fails on every rank now, not at the end
    return run_options(comm, SweepOptions.request(**options), directory, wait, expect=expect)


def run_options(comm, options, directory=None, wait=None, *, expect=None, options_for=None, only=None,
                includes=(), prometheus=None):
    """The fleet job measuring every node as ``options`` (a requested
    :class:`~corelat._measure.options.SweepOptions`, resolved on each node) say, or as
    ``options_for(node)`` says for a node (a mixed partition)."""
    defaulted = _options_wait(options) if wait is None else None

    def measure_node(node):
        return _sweep.run(dataclasses.replace(options_for(node) if options_for else options, name=node))

    return run(comm, measure_node, directory, float(defaulted if wait is None else wait), expect=expect,
               wait_per_node=wait is None, only=only, includes=includes, prometheus=prometheus)
