"""Numbers, CPU lists and group phrases in the words the structure reading speaks."""

from __future__ import annotations

import math

from corelat._system.cpulist import format as fmt


def _uniform_threads(cores):
    sizes = {len(c) for c in cores}
    return sizes.pop() if len(sizes) == 1 else None


def _group_phrase(groups, cores, threads, whole=False):
    sizes = [len(g) for g in groups]
    if whole:
        head = f"{sizes[0]} CPUs"
    elif len(set(sizes)) == 1:
        head = f"{len(groups)} groups of {sizes[0]} CPUs"
    else:
        head = f"{len(groups)} groups ({', '.join(str(s) for s in sizes)} CPUs)"
    if threads and threads > 1 and len(set(cores)) == 1:
        head += f" ({cores[0]} cores × {threads} threads)"
    elif any(c != s for c, s in zip(cores, sizes)) and len(set(cores)) == 1:
        head += f" ({cores[0]} cores)"
    return head


def _num(v):
    if v is None or math.isnan(v):
        return "?"
    return f"{v:.1f}" if v < 10 else f"{v:.0f}"


def _ns(v):
    return f"{_num(v)} ns"


def _join(items):
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _cpus(ids):
    return fmt(ids)


def _jsonable(v):
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else v
