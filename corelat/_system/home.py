"""Where the line lives: the NUMA home of each pair's page, and who touched it first.

A cache line's transfer cost depends on where its memory lives (its *home* node, whose memory
controller and directory answer for it) and on which core held it last, not only on the two CPUs
that pass it. ``measure(home=...)`` makes the home a chosen, recorded dimension:

* ``"initiator"`` (the default): the timing thread maps and first-touches the pair's page, so it
  lives on the initiator's node;
* ``"responder"``: the other thread of the pair first-touches it (the responder's node);
* ``"node:K"``: ``mbind(2)`` prefers node K for the page before the initiator first-touches it;
* ``"cpu:K"``: a third thread pinned to CPU K maps, first-touches and writes the page before every
  sample, then exits: the line starts each sample Modified in CPU K's cache and homed on K's node.

After the first touch the C side asks ``move_pages(2)`` (query mode) where the page really is; the
sweep records it per pair in ``extras["home_node"]`` and warns about pairs whose page is not where it
was asked to be (memory policy, cpuset ``mems``, a node without free memory). Raw syscalls, no
libnuma.
"""

from __future__ import annotations

import os
import re
from typing import NamedTuple

import numpy as np

from corelat._core.errors import InputError, InputTypeError
from corelat._system import cpulist as _cpulist
from corelat._system import sysinfo as _sysinfo
from corelat._system.topology import topology
from corelat._system.validate import allowed_cpus

#: The home choices of :func:`corelat.measure` (``K`` a NUMA node or a CPU id).
HOMES = ("initiator", "responder", "node:K", "cpu:K")

_HOME = re.compile(r"(node|cpu):(\d{1,7})\Z")
_NODE_ROOT = "/sys/devices/system/node"

#: ``extras["home_node"]`` values that are not a node.
UNKNOWN_NODE, SPREAD_NODE = -1, -2


class Home(NamedTuple):
    """A validated ``home`` (see :data:`HOMES`)."""

    kind: str  #: "initiator", "responder", "node" or "cpu"
    value: int | None = None  #: the node (``node:K``) or the third CPU (``cpu:K``)

    @property
    def label(self):
        """The spelling users write: ``"initiator"``, ``"node:1"``, ..."""
        return self.kind if self.value is None else f"{self.kind}:{self.value}"

    @property
    def method(self):
        """How the page is placed, in words (for the result's metadata)."""
        return {
            "initiator": "first touch by the initiator (the timing thread)",
            "responder": "first touch by the responder",
            "node": f"mbind(MPOL_PREFERRED, node {self.value}) before the initiator's first touch",
            "cpu": f"first touch and a write of every line by a third thread on CPU {self.value} before "
                   "every "
                   "sample (one sample per kernel call, no warm-up)",
        }[self.kind]


def parse_home(home):
    """Read a ``home`` argument (a :class:`Home`, or a string from :data:`HOMES`); InputError if malformed."""
    if isinstance(home, Home):
        return home
    if home is None:
        return Home("initiator")
    if not isinstance(home, str):
        raise InputError("home must be a string like 'initiator', 'responder', 'node:1' or 'cpu:5', not "
                         f"{home!r}")
    text = home.strip().lower()
    if text in ("initiator", "responder"):
        return Home(text)
    m = _HOME.match(text)
    if not m:
        raise InputError(f"unknown home {home!r}; use one of: {', '.join(HOMES)} (K a NUMA node or a CPU id)")
    return Home(m.group(1), int(m.group(2)))


def one_home(result, home=None, *, hint="pass home=K"):
    """The :class:`~corelat.LatencyResult` to analyse or draw: ``result`` itself, or for a
    :class:`~corelat.PlacementResult` the home ``home`` names (its label, a NUMA node K or a position).

    Raises InputError for a placement result without ``home`` (``hint`` says what to do instead),
    and for a ``home`` that a plain result was not measured with. (A placement result is told by its
    ``homes`` and ``results``: importing its class here would make _structure import _placement.)
    """
    placement = hasattr(result, "homes") and hasattr(result, "results")
    if not (placement or hasattr(result, "statistic") and hasattr(result, "cpus")):
        raise InputTypeError(f"expected a LatencyResult or a PlacementResult, not {type(result).__name__}")
    if placement:
        if home is None:
            raise InputError(f"a placement result holds {len(result.homes)} homes "
                             f"({', '.join(result.homes)}): "
                             f"{hint}")
        return result.result(home)
    if home is not None:
        asked = result.metadata.get("home", {}).get("requested", "initiator")
        want = parse_home(f"node:{home}" if isinstance(home, (int, np.integer)) else home).label
        if want != asked:
            raise InputError(f"this result was measured with home {asked}, not {want}")
    return result


def memory_nodes(root="/"):
    """NUMA nodes that have memory (``has_memory``, else every ``nodeN`` folder; ``(0,)`` without NUMA)."""
    base = os.path.join(root, _NODE_ROOT.lstrip("/"))
    text = _sysinfo.read_text(os.path.join(base, "has_memory"))
    if text:
        try:
            return tuple(sorted(_cpulist.parse(text)))
        except (InputError, ValueError):
            pass
    try:
        names = os.listdir(base)
    except OSError:
        return (0,)
    nodes = sorted(int(n[4:]) for n in names if re.fullmatch(r"node\d+", n))
    return tuple(nodes) or (0,)


def allowed_mems(status_path="/proc/self/status"):
    """The NUMA nodes this process may allocate on (cpuset ``mems``: ``Mems_allowed_list``), or None."""
    for line in (_sysinfo.read_text(status_path) or "").splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "Mems_allowed_list":
            try:
                return frozenset(_cpulist.parse(value.strip()))
            except (InputError, ValueError):
                return None
    return None


def cpu_nodes(topo=None):
    """``{cpu: node}`` of the live machine (CPUs whose node is unknown are left out)."""
    if topo is None:

        try:
            topo = topology()
        except Exception:  # noqa: BLE001 - a placement check must not fail on an odd sysfs
            return {}
    return {r["cpu"]: r["node"] for r in topo.records() if r["node"] is not None}


def check_home(home, cpus, kernel, *, nodes=None, mems=None, allowed=None):
    """Validate ``home`` for a sweep of ``cpus`` with ``kernel``; returns a :class:`Home`.

    Raises InputError for a request that cannot be met: a node that does not exist or has no memory,
    a node the cpuset's ``mems`` forbid, a third CPU that is not available or is one of ``cpus``.
    ``nodes``, ``mems`` and ``allowed`` default to the live machine's (for tests: fixtures).
    """
    h = parse_home(home)
    if h.kind == "node":
        nodes = memory_nodes() if nodes is None else tuple(nodes)
        if h.value not in nodes:
            raise InputError(f"home {h.label}: this machine has no NUMA node {h.value} with memory "
                             f"(nodes with memory: {_cpulist.format(nodes)})")
        mems = allowed_mems() if mems is None else mems
        if mems is not None and h.value not in mems:
            raise InputError(f"home {h.label}: this process may not allocate on node {h.value} (its cpuset "
                             "allows "
                             f"memory on node {_cpulist.format(sorted(mems))} only)")
    elif h.kind == "cpu":
        if kernel in ("read-clean", "read-modified"):
            raise InputError(f"home {h.label} does not apply to kernel {kernel!r}: its owner already touches "
                             "the lines before every sample; choose the owner's home with 'node:K' or "
                             "'responder'")
        if allowed is None:

            allowed = allowed_cpus()
        if h.value not in allowed:
            raise InputError(f"home {h.label}: CPU {h.value} is not available to this process "
                             f"(allowed CPUs: {_cpulist.format(sorted(allowed))})")
        if h.value in cpus:
            raise InputError(f"home {h.label}: the third CPU must not be one of the measured CPUs "
                             f"({_cpulist.format(sorted(cpus))}); leave CPU {h.value} out of the CPUs to "
                             "measure")
    return h


def merge_reports(old, new):
    """Combine what two kernel calls on one pair report, ``(home_node, bind_errno, query_errno, ...)``:
    the node where both agree, -2 (spread) where they differ, -1 if either is unknown."""
    if old is None:
        return tuple(new)
    node = old[0] if old[0] == new[0] else (UNKNOWN_NODE if UNKNOWN_NODE in (old[0], new[0]) else SPREAD_NODE)
    return (node, old[1] or new[1], old[2] or new[2]) + tuple(new[3:])


# ---- pointer chains for read-clean / read-modified ------------------------------------------------

def chain_order(lines, rng=None):
    """A random order of ``lines`` 64 B lines for the pointer chase: one cycle over all of them (the
    last leads back to the first) in which no two consecutive lines, the last and the first included,
    share a 128 B pair (lines ``2k`` and ``2k+1``), so the adjacent-line prefetcher never fetches the
    next line of the chain. ``lines`` must be even and at least 4.

    Every pair is visited once in each half of the cycle, its two lines in different halves; the
    halves' pair orders are drawn independently until the two seams differ.
    """
    if isinstance(lines, bool) or not isinstance(lines, (int, np.integer)) or lines < 4 or lines % 2:
        raise InputError(f"a chain needs an even number of lines, at least 4, got {lines!r}")
    rng = np.random.default_rng(rng)
    pairs = int(lines) // 2
    while True:
        first, second = rng.permutation(pairs), rng.permutation(pairs)
        if first[-1] != second[0] and second[-1] != first[0]:
            break
    side = rng.integers(0, 2, pairs)
    return np.concatenate((2 * first + side[first], 2 * second + 1 - side[second])).astype(np.int64)


#: Chain length limits: at least 64 lines (the prefetchers learn short chains), at most 4096 (256 KiB,
#: beyond which TLB misses join the transfers), and half the owner's L2 so the owner holds all of it.
CHAIN_MIN_LINES, CHAIN_MAX_LINES = 64, 4096
_DEFAULT_L2 = 256 * 1024


def cache_bytes(cpu, level=2, root="/"):
    """Size in bytes of CPU ``cpu``'s data or unified cache of ``level`` from sysfs, or None."""
    base = os.path.join(root, f"sys/devices/system/cpu/cpu{int(cpu)}/cache")
    try:
        names = sorted(n for n in os.listdir(base) if re.fullmatch(r"index\d+", n))
    except OSError:
        return None
    for name in names:
        d = os.path.join(base, name)
        if _sysinfo.read_text(os.path.join(d, "level")) != str(level):
            continue
        if _sysinfo.read_text(os.path.join(d, "type")) not in ("Data", "Unified"):
            continue
        m = re.fullmatch(r"(\d+)\s*([KMG]?)", _sysinfo.read_text(os.path.join(d, "size")) or "")
        if m:
            return int(m.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2)]
    return None


def chain_lines(owner_cpu, root="/"):
    """Lines in the chain for an owner: half its L2 (256 KiB assumed where sysfs says nothing),
    even, within [CHAIN_MIN_LINES, CHAIN_MAX_LINES]."""
    size = cache_bytes(owner_cpu, 2, root) or _DEFAULT_L2
    lines = size // 64 // 2
    return int(min(max(lines - lines % 2, CHAIN_MIN_LINES), CHAIN_MAX_LINES))
