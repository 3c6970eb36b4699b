"""Show this machine's topology: packages, NUMA nodes, L3 groups, cores and SMT siblings."""

import json
import os

from corelat._core.errors import InputError
from corelat._system.topology import topology


def add_arguments(p):
    p.add_argument("--root", default="/", help="file-system root to read sysfs from (a dump; default /)")
    p.add_argument("--json", action="store_true",
                   help="print the topology as JSON (its per-CPU records under \"cpus\")")


def run(args):
    if not os.path.isdir(os.path.join(args.root, "sys/devices/system/cpu")):
        raise InputError(f"{args.root!r} has no sys/devices/system/cpu to read a topology from")
    topo = topology(args.root)
    if args.json:
        print(json.dumps(topo.to_dict(), indent=1))
    else:
        print(topo)
    return 0
