"""Kinds of hardware in a fleet where the files do not say: CPU models from the user, and sub-groups.

Other tools' files (core-to-core-latency, c2clat) carry no CPU model, and in a fleet folder a file's
name is its node's name, so a model can come only from the user: one model for every such file, or a
mapping file of lines ``NODELIST MODEL`` (``node[01-08] AMD Ryzen 9 5950X``). Without one, such files
are grouped by CPU count, and :func:`subgroups` tells a second kind of machine from an outlier: when
several nodes of such a group are off in the same way, they are named as a sub-group of other
hardware instead of being blamed one by one; a lone node that is off is still an outlier.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping

from corelat._core import files as _files
from corelat._core.errors import InputError, InputTypeError, unreadable
from corelat._fleet.hostlist import MAX_LIST_BYTES, expand

#: Nodes off alike that make a sub-group of other hardware: at least this many...
SUBGROUP_MIN = 3
#: ... or at least this fraction of their group (and two nodes).
SUBGROUP_FRACTION = 0.2


def _mapping_file(path):
    try:
        text = _files.read_bytes(path, MAX_LIST_BYTES).decode("utf-8")
    except OSError as e:
        raise unreadable(path, e, "the model mapping file ") from None
    except UnicodeDecodeError as e:
        raise InputError(f"the model mapping file {path} is not UTF-8 text ({e.reason})") from None
    pairs = []
    for k, line in enumerate(text.splitlines(), 1):
        words = line.split("#", 1)[0].split(None, 1)
        if not words:
            continue
        if len(words) < 2:
            raise InputError(f"{path}, line {k}: expected 'NODELIST MODEL', got {line.strip()!r}")
        pairs.append((words[0], words[1].strip()))
    return pairs


def model_of(spec):
    """A function node -> CPU model (or None) from ``spec``: None, one model for every node, a path to
    a mapping file of ``NODELIST MODEL`` lines, or a mapping {node list: model}."""
    if spec is None:
        return lambda node: None
    if isinstance(spec, Mapping):
        pairs = [(str(k), str(v)) for k, v in spec.items()]
    elif isinstance(spec, (str, os.PathLike)):
        path = os.fspath(spec)
        if not os.path.isfile(path):
            if "/" in path and not os.path.exists(path):
                raise InputError(f"model mapping file {path}: no such file")
            model = path.strip()
            if not model:
                raise InputError("--model: give a CPU model or a mapping file")
            return lambda node: model
        pairs = _mapping_file(path)
    else:
        raise InputTypeError(f"model: give a name, a mapping file or a dict, not {type(spec).__name__}")
    table = {}
    for nodes, model in pairs:
        for n in expand(nodes):
            table.setdefault(n, model)
    return table.get


def subgroups(outliers, count):
    """(outliers kept, sub-groups): flagged nodes of a group of ``count`` nodes that are off in the
    same classes the same way, when there are enough of them, become one sub-group each
    ``{"nodes": [...], "classes": {class: median deviation}}``."""
    by_node = {}
    for o in outliers:
        by_node.setdefault(o.node, []).append(o)
    alike = {}
    for node, outs in by_node.items():
        alike.setdefault(tuple(sorted((o.cls, o.deviation > 0) for o in outs)), []).append(node)
    enough = max(2, min(SUBGROUP_MIN, math.ceil(SUBGROUP_FRACTION * count)))
    found, moved = [], set()
    for nodes in alike.values():
        if len(nodes) >= enough:
            devs = {}
            for n in nodes:
                for o in by_node[n]:
                    devs.setdefault(o.cls, []).append(o.deviation)
            found.append({"nodes": nodes, "classes": {c: sorted(v)[len(v) // 2] for c, v in devs.items()}})
            moved.update(nodes)
    return [o for o in outliers if o.node not in moved], found
