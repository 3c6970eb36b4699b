"""Does the reason a fleet job ends reach the user? Runs many tiny 3-rank MPI jobs; prints a table.

    python benchmarks/mpi_abort.py [--jobs 100] [--grace 0 0.5] [--quick]

In each job rank 0 ends the job at once, as ``corelat fleet`` does when a rank never joins: it
says why (``_fleet_run._abort``, with ``ABORT_GRACE`` set to each ``--grace`` in turn) and calls
MPI_Abort; the other ranks sleep, one of them in corelat and one outside it. A job "lost" the reason
when the launcher's stderr does not hold it. Needs mpi4py and an ``mpiexec`` (``pip install mpi4py
mpich``).
"""

import argparse
import os
import shutil
import subprocess
import sys
import time

RANK = """
import sys, time
from mpi4py import MPI
from corelat._fleet import run as _fleet_run
_fleet_run.ABORT_GRACE = float(sys.argv[1])
if MPI.COMM_WORLD.Get_rank() == 0:
    _fleet_run._abort(MPI.COMM_WORLD, "REASON-{}".format(sys.argv[2]))
time.sleep(60)
"""
STRAY = "from mpi4py import MPI; import time; time.sleep(60)"


def launcher():
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return here if os.access(here, os.X_OK) else shutil.which("mpiexec")


def one_job(mpiexec, grace, k):
    cmd = [mpiexec, "-n", "1", sys.executable, "-c", RANK, str(grace), str(k), ":",
           "-n", "1", sys.executable, "-c", RANK, str(grace), str(k), ":",
           "-n", "1", sys.executable, "-c", STRAY]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    return f"REASON-{k}" in p.stderr, p.returncode


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=100)
    ap.add_argument("--grace", type=float, nargs="+", default=[0.0, 0.5])
    ap.add_argument("--quick", action="store_true", help="3 jobs per grace (CI's smoke run)")
    args = ap.parse_args()
    if args.quick:
        args.jobs = 3
    mpiexec = launcher()
    if mpiexec is None:
        sys.exit("mpi_abort.py: no mpiexec (pip install mpi4py mpich)")
    print(f"{'grace (s)':>9}  {'jobs':>5}  {'lost':>5}  {'lost %':>6}  {'s per job':>9}  exit codes")
    for grace in args.grace:
        t0, lost, codes = time.monotonic(), 0, set()
        for k in range(args.jobs):
            said, rc = one_job(mpiexec, grace, k)
            lost += not said
            codes.add(rc)
        took = (time.monotonic() - t0) / args.jobs
        print(f"{grace:>9g}  {args.jobs:>5}  {lost:>5}  {100 * lost / args.jobs:>6.1f}  {took:>9.2f}  "
              f"{sorted(codes)}", flush=True)


if __name__ == "__main__":
    main()
