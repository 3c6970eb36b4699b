"""Node lists: Slurm-style host lists (``node[01-64],gpu[1-3,7]``) and files of names; node names.

Only expansion is needed (``--expect``): a list names the nodes that should have reported. A node's
name in a fleet is its file's name (:func:`file_name`); names that become one name once cleaned are
kept apart (:func:`unique_names`).
"""

import math
import os
import re

from corelat._core import files as _files
from corelat._core.errors import InputError, InputFileNotFoundError, InputTypeError, unreadable
from corelat._core.npz import short

_RANGE = re.compile(r"(\d+)(?:-(\d+))?\Z")
#: Characters a node name keeps as a file name; the others become "_".
_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]")
#: A host list naming more nodes than this is a typo, not a cluster.
MAX_NODES = 1_000_000
#: Largest node list file read (a million names of 16 characters).
MAX_LIST_BYTES = 16 << 20
#: Endings of node list files: such a name that is not there is a missing file, not a host name.
LIST_SUFFIXES = (".txt", ".list", ".lst", ".csv", ".hosts", ".nodes", ".conf")


def _split_top(text):
    """Split at commas outside brackets."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
            if depth > 1:
                raise InputError(f"host list {text!r}: nested brackets")
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise InputError(f"host list {text!r}: ']' without '['")
        elif ch == "," and depth == 0:
            out.append(text[start:i])
            start = i + 1
    if depth:
        raise InputError(f"host list {text!r}: '[' without ']'")
    out.append(text[start:])
    return [s.strip() for s in out if s.strip()]


def _expand_ranges(inner, item):
    values = []
    for part in inner.split(","):
        m = _RANGE.match(part.strip())
        if not m:
            raise InputError(f"host list item {item!r}: {part!r} is not a number or a range like 01-64")
        lo, hi = m.group(1), m.group(2) or m.group(1)
        if int(hi) < int(lo):
            raise InputError(f"host list item {item!r}: range {part!r} runs backwards")
        if int(hi) - int(lo) >= MAX_NODES:
            raise InputError(f"host list item {item!r}: range {part!r} names more than {MAX_NODES} nodes")
        width = len(lo) if lo.startswith("0") else 0  # node[01-10] keeps its zero padding
        values.extend(f"{v:0{width}d}" for v in range(int(lo), int(hi) + 1))
    return values


def _count(inner):
    """How many names a bracket's ranges give, without making them (0 for a malformed one)."""
    total = 0
    for part in inner.split(","):
        m = _RANGE.match(part.strip())
        if m:
            total += max(int(m.group(2) or m.group(1)) - int(m.group(1)) + 1, 0)
    return total


def expand(text, budget=MAX_NODES):
    """Names from a Slurm-style host list: ``"node[01-03],login1"`` -> node01, node02, node03, login1.

    Several bracket groups in one item multiply (``r[1-2]n[1-2]`` -> r1n1, r1n2, r2n1, r2n2).
    Duplicates are dropped, the first occurrence keeps its place. A list naming more than
    ``budget`` nodes in all (:data:`MAX_NODES`) is refused before any name is made: 3,000 items
    of a million nodes each took 9 GB.
    """
    names = []
    for item in _split_top(text):
        pieces = re.split(r"\[([^\]]*)\]", item)
        size = math.prod(_count(p) for p in pieces[1::2])
        if len(names) + size > budget:
            raise InputError(f"host list item {short(item, 60)} brings the list to more than {budget:,} "
                             "nodes; refused before expanding it")
        combos = [""]
        for k, piece in enumerate(pieces):
            options = _expand_ranges(piece, item) if k % 2 else [piece]
            combos = [c + o for c in combos for o in options]
            if len(combos) > MAX_NODES:
                raise InputError(f"host list item {item!r} names more than {MAX_NODES} nodes")
        names.extend(combos)
    return list(dict.fromkeys(n for n in names if n))


def _names_in(text):
    """The names a node list file's text gives, under one budget for the whole file."""
    words = []
    for line in text.splitlines():
        words.extend(line.split("#", 1)[0].split())
    names = []
    for w in words:
        names.extend(expand(w, MAX_NODES - len(names)))
    return list(dict.fromkeys(names))


def expected_nodes(spec):
    """Node names from ``spec``: a path to a file (names separated by lines, spaces or commas; ``#``
    starts a comment; each may be a host list), a host list string, or an iterable of names."""
    if spec is None:
        return None
    if not isinstance(spec, (str, os.PathLike)):
        try:
            return list(dict.fromkeys(str(s) for s in spec))
        except TypeError:
            raise InputTypeError(f"expected nodes: give a list of names, a file or a host list, not "
                                 f"{type(spec).__name__}") from None
    path = os.fspath(spec)
    if os.path.isdir(path) and "/" in path:
        raise InputError(f"node list {path}: a folder, not a file of node names")
    if os.path.lexists(path) and not os.path.isdir(path):  # a folder "node01" beside you: a host name
        try:
            text = _files.read_bytes(path, MAX_LIST_BYTES).decode("utf-8")
        except OSError as e:  # not a regular file (/dev/zero, a FIFO, a folder), too large, unreadable
            raise unreadable(path, e, "the node list ") from None
        except UnicodeDecodeError as e:
            raise InputError(f"the node list {path} is not UTF-8 text ({e.reason} at byte {e.start})") \
                from None
        return _names_in(text)
    if "/" in path or path.lower().endswith(LIST_SUFFIXES):  # nosuchfile.txt is a typo, not a host
        raise InputFileNotFoundError(f"node list {path}: no such file")
    return expand(path)


# -- node names ---------------------------------------------------------------------------------------------
def file_name(name):
    """A node's name made safe as a file name (``cn/001`` -> ``cn_001``): at most 200 characters, no
    leading dot; ``node`` when nothing is left."""
    return _UNSAFE.sub("_", str(name)).lstrip(".")[:200] or "node"


def unique_names(by_node):
    """({key: the node's name}, notes) from ``{(machine, name, given name): ranks}``, in rank order.

    A name taken already gets its first rank's number (``cn_001-rank2``) and a note that says why:
    the same name on two machines, or given names (``cn/001``, ``cn:001``) that are one name once
    cleaned as file names, which would otherwise be measured as one node and leave the others out.
    """
    names, notes, owner = {}, [], {}
    for key, ranks in sorted(by_node.items(), key=lambda kv: kv[1][0]):
        _machine, name, given = key
        unique = name
        if unique in owner:
            unique = f"{name}-rank{ranks[0]}"
            first = owner[name]
            if first[2] != given:
                notes.append(f"node names {first[2]!r} and {given!r} are both {name!r} as a file name; the "
                             f"one of rank {ranks[0]} ({given!r}) is called {unique!r}")
            else:
                notes.append(f"node name {name!r} is used on two machines; the one of rank {ranks[0]} is "
                             f"called {unique!r}")
        owner.setdefault(name, key)
        names[key] = unique
    return names, notes


def short_name(name):
    """A host name without its domain (``cn001.cluster.local`` -> ``cn001``); an IP address as it is."""
    name = str(name)
    head = name.split(".", 1)[0]
    return name if head.isdigit() else head


def match(expected, have):
    """(expected names without a node, sorted names of nodes not expected) of a node list against the
    nodes that reported. A name matches itself, else a name of the same host without its domain
    (``cn001`` and ``cn001.cluster.local``: Slurm's lists name short names, a host name may be the
    FQDN) where that short name is one node's on each side; an ambiguous one matches nothing."""
    expected = list(dict.fromkeys(expected))
    have = set(have)
    missing = [n for n in expected if n not in have]
    extra = have - set(expected)
    by_short_extra, by_short_missing = {}, {}
    for n in extra:
        by_short_extra.setdefault(short_name(n), []).append(n)
    for n in missing:
        by_short_missing.setdefault(short_name(n), []).append(n)
    matched = set()
    for head, names in by_short_missing.items():
        others = by_short_extra.get(head, [])
        if len(names) == 1 and len(others) == 1:
            matched.add(names[0])
            extra.discard(others[0])
    return [n for n in missing if n not in matched], sorted(extra)
