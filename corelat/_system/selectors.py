"""CPU selections by topology: ``cores``, ``l3``, ``node:1``, ``node:0+node:1-smt``, ``0-7-smt``.

The grammar (the README's "Choosing CPUs" and ``--help`` say the same)::

    selection := term (op term)*
    op        := "+" | ","            union: the CPUs of both, each once
               | "-"                  removal: the CPUs on the left that are not on the right
    term      := CPU list             today's syntax: 0,2,4-7 and strides 0-15:2
               | "all"                every CPU that may be chosen
               | "cores"              the first thread of every core
               | "smt"                every thread of a core but its first
               | GROUP                the first CPU of each group: one CPU per group
               | GROUP ":" K          every CPU of group K
    GROUP     := "package" | "die" | "node" | "l3" | "l2"

Operators bind left to right, with no precedence: ``a+b-c`` is ``(a+b)-c``. A CPU list runs as far
as its numbers do: a ``-`` between two of its numbers is a range (``0-7``) and a ``,`` before a
number is part of it (``all-0,1`` removes CPUs 0 and 1); anywhere else ``-`` removes (``cores-0``;
``node:0-3`` is node 0 without CPU 3, as a group's K is one number). ``package:K`` and ``node:K``
are the kernel's numbers (as ``numactl`` shows them); ``die:K``, ``l3:K`` and ``l2:K`` count those
groups from 0 in topology order (the ``L3#K`` of
:meth:`~corelat._system.topology.Topology.describe_cpu`). Words are case-insensitive; spaces are
ignored beside operators.

A selection with a word in it yields its CPUs in topology order (package, node, L3, core), so a
heatmap of ``l3`` reads as the map of the L3 groups; one made of CPU lists only keeps the order it
was written in. Everything here is pure: it reads a :class:`~corelat._system.topology.Topology`
given to it, never the machine (:func:`corelat._system.validate.resolve_cpus` does that).
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from corelat._core.errors import InputError
from corelat._system import cpulist as _cpulist

#: Words that choose CPUs by themselves, and what each means.
WORDS = {
    "all": "every CPU that may be chosen",
    "cores": "the first thread of every core (one CPU per core)",
    "smt": "every thread of a core but its first",
}
#: Group words: ``GROUP`` (the first CPU of each) and ``GROUP:K`` (every CPU of group K).
GROUPS = ("package", "die", "node", "l3", "l2")
#: Groups whose K is the kernel's number; the others count from 0 in topology order.
_KERNEL_NUMBERED = ("package", "node")
_SYSFS = {
    "core": "topology/core_id and thread_siblings_list",
    "package": "topology/physical_package_id and package_cpus_list",
    "die": "topology/die_id",
    "node": "the node*/cpulist files of /sys/devices/system/node",
    "l3": "cache/index*/ of level 3 (shared_cpu_list)",
    "l2": "cache/index*/ of level 2 (shared_cpu_list)",
}
# A word (with its ":K"), a CPU list (a "-" or "," in it is followed by a digit), or one character.
_TOKEN = re.compile(r"[a-z][a-z0-9]*(?::\d*)?|\d(?:[\d:]|[,-](?=\d))*|.", re.ASCII)
_MAX_TEXT = 10_000


class Term(NamedTuple):
    """One term of a selection: ``op`` ("+" or "-"), and either a ``word`` (with its group number
    ``k`` or None) or the ``cpus`` of a CPU list."""

    op: str
    text: str
    word: str | None = None
    k: int | None = None
    cpus: tuple[int, ...] = ()


def _shown(text):
    return repr(text) if len(text) <= 60 else repr(text[:57] + "...")


def is_selection(text: Any) -> bool:
    """Whether ``text`` is more than a plain CPU list (a word or a ``+``): only then does it need
    the topology."""
    return isinstance(text, str) and bool(re.search(r"[A-Za-z+]", text))


def _word_term(op, token, text):
    word, colon, k_text = token.partition(":")
    if word not in WORDS and word not in GROUPS:
        raise InputError(f"bad CPU list {_shown(text)}: unknown word {word!r}; use a CPU list, "
                         f"{', '.join(WORDS)}, a group ({', '.join(GROUPS)}) or GROUP:K")
    if not colon:
        return Term(op, token, word)
    if word in WORDS:
        raise InputError(f"bad CPU list {_shown(text)}: {word!r} takes no ':K' (only "
                         f"{', '.join(GROUPS)} do)")
    if not k_text:
        raise InputError(f"bad CPU list {_shown(text)}: {token!r} needs a group number, like {word}:0")
    if len(k_text) > 9:
        raise InputError(f"bad CPU list {_shown(text)}: {word} {k_text[:12]} does not exist")
    return Term(op, token, word, int(k_text))


def _list_term(op, token, text):
    try:
        cpus = _cpulist.parse(token, limit=1 << 22)
    except InputError as exc:
        raise InputError(f"bad CPU list {_shown(text)}: {exc}") from None
    return Term(op, token, cpus=tuple(cpus))


def parse(text: str) -> list[Term]:
    """The terms of a selection, in order; the first one's ``op`` is ``"+"``.

    Raises
    ------
    InputError
        For text that does not follow the grammar, naming what is wrong and where.
    """
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"empty CPU selection {text!r:.60}")
    if len(text) > _MAX_TEXT:
        raise InputError(f"CPU selection of {len(text):,} characters: too long")
    lowered = text.lower()
    apart = re.search(r"[a-z0-9]\s+[a-z0-9]", lowered, re.ASCII)
    if apart:
        raise InputError(f"bad CPU list {_shown(text)}: {apart.group()!r} has no '+', ',' or '-' "
                         "between its terms")
    flat = re.sub(r"\s+", "", lowered)
    terms: list[Term] = []
    op: str | None = "+"
    for token in _TOKEN.findall(flat):
        if token in "+,-":
            if op is not None:
                where = "starts" if not terms else "has two operators in a row"
                raise InputError(f"bad CPU list {_shown(text)}: it {where} ({token!r}); write a CPU "
                                 "list or a word before each '+', ',' or '-'")
            op = "-" if token == "-" else "+"
            continue
        if not (token[0].isascii() and token[0].isalnum()):
            raise InputError(f"bad CPU list {_shown(text)}: unexpected {token!r}; use CPU numbers, "
                             "words, ':', '+', ',' and '-'")
        if op is None:
            raise InputError(f"bad CPU list {_shown(text)}: {token!r} follows "
                             f"{terms[-1].text!r} without '+', ',' or '-' between them")
        terms.append((_list_term if token[0].isdigit() else _word_term)(op, token, text))
        op = None
    if op is not None:
        raise InputError(f"bad CPU list {_shown(text)}: it ends with an operator; a CPU list or a "
                         "word must follow")
    return terms


# --------------------------------------------------------------------------------------------
# Evaluation over a topology


class _Machine:
    """The rows of the CPUs that may be chosen, in topology order, and the groups among all online
    CPUs (a group exists where an online CPU is in it, even if none of its CPUs may be chosen)."""

    def __init__(self, topology, allowed):
        ordered, _ = topology.order(topology.cpus)
        by_cpu = {r["cpu"]: r for r in topology.records()}
        self.all_rows = [by_cpu[c] for c in ordered]
        allowed_set = set(topology.allowed if allowed is None else allowed)
        self.rows = [r for r in self.all_rows if r["cpu"] in allowed_set]
        self.cpus = [r["cpu"] for r in self.rows]

    def key(self, level, row):
        if level == "die":
            return None if row["die"] is None or row["package"] is None else (row["package"], row["die"])
        return row[level]

    def hidden(self, level):
        """The CPUs that may be chosen whose group at ``level`` sysfs does not say."""
        return [r["cpu"] for r in self.rows if self.key(level, r) is None]

    def groups(self, level: str) -> dict[Any, list[int]]:
        """``{key: [cpu, ...]}`` over every online CPU, in topology order of the groups."""
        out: dict[Any, list[int]] = {}
        for r in self.all_rows:
            out.setdefault(self.key(level, r), []).append(r["cpu"])
        return out

    def numbers(self, level):
        """``{K: key}``: the kernel's numbers for package and node, else the index in topology order."""
        keys = [k for k in self.groups(level) if k is not None]
        if level in _KERNEL_NUMBERED:
            return {k: k for k in sorted(keys)}
        return dict(enumerate(keys))


def _honoured(machine):
    """The words this machine's sysfs lets be honoured."""
    levels = ("core", *GROUPS)
    shown = {lv for lv in levels if machine.rows and not machine.hidden(lv)}
    out = ["all"] + (["cores", "smt"] if "core" in shown else [])
    return out + [w for w in GROUPS if w in shown]


def _refuse_hidden(machine, term, text):
    level = "core" if term.word in ("cores", "smt") else term.word
    hidden = machine.hidden(level)
    if not hidden:
        return
    what = {"core": "core", "die": "die", "l3": "L3 cache", "l2": "L2 cache"}.get(level, level)
    usable = _honoured(machine)
    raise InputError(
        f"CPU selection {_shown(text)}: {term.text!r} cannot be honoured here: sysfs does not say the "
        f"{what} of CPU {_cpulist.format(hidden)} (no readable {_SYSFS[level]}: old kernels, some VMs "
        f"and containers leave them out); here only {', '.join(usable)} and CPU lists can be used")


def _first_of_cores(machine):
    firsts, seen = [], set()
    for r in machine.rows:
        if r["core"] not in seen:
            seen.add(r["core"])
            firsts.append(r["cpu"])
    return firsts


def _group_cpus(machine, term, text):
    numbers = machine.numbers(term.word)
    if term.k not in numbers:
        which = "numbers" if term.word in _KERNEL_NUMBERED else "groups, counted in topology order"
        have = _cpulist.format(numbers) if numbers else "none"
        raise InputError(f"CPU selection {_shown(text)}: there is no {term.word} {term.k} on this machine "
                         f"({term.word} {which}: {have})")
    members = machine.groups(term.word)[numbers[term.k]]
    chosen = set(machine.cpus)
    out = [c for c in members if c in chosen]
    if not out:
        raise InputError(f"CPU selection {_shown(text)}: none of the CPUs of {term.text} "
                         f"({_cpulist.format(members)}) may be chosen (these may: "
                         f"{_cpulist.format(machine.cpus) or 'none'})")
    return out


def _word_cpus(machine, term, text):
    """The CPUs a word term chooses, in topology order."""
    if term.word == "all":
        return list(machine.cpus)
    _refuse_hidden(machine, term, text)
    if term.word in ("cores", "smt"):
        firsts = _first_of_cores(machine)
        if term.word == "cores":
            return firsts
        first_set = set(firsts)
        return [c for c in machine.cpus if c not in first_set]
    if term.k is not None:
        return _group_cpus(machine, term, text)
    firsts, seen = [], set()
    for r in machine.rows:
        key = machine.key(term.word, r)
        if key not in seen:
            seen.add(key)
            firsts.append(r["cpu"])
    return firsts


def _list_cpus(machine, term, text):
    chosen = set(machine.cpus)
    bad = [c for c in term.cpus if c not in chosen]
    if bad:
        raise InputError(f"CPU selection {_shown(text)}: CPU {_cpulist.format(bad)} of {term.text!r} may "
                         f"not be chosen (these may: {_cpulist.format(machine.cpus) or 'none'})")
    return list(term.cpus)


def combine(terms: Iterable[tuple[str, Sequence[int]]]) -> list[int]:
    """Apply ``(op, cpus)`` pairs left to right: union for ``"+"`` (new CPUs appended, each once),
    removal for ``"-"``."""
    out: list[int] = []
    for op, cpus in terms:
        if op == "+":
            have = set(out)
            for c in cpus:
                if c not in have:
                    have.add(c)
                    out.append(c)
        else:
            gone = set(cpus)
            out = [c for c in out if c not in gone]
    return out


def select(text: str, topology: Any = None, allowed: Iterable[int] | None = None,
           minimum: int = 0) -> tuple[int, ...]:
    """The CPUs a selection chooses.

    Parameters
    ----------
    text : str
        A selection (see the module's grammar).
    topology : Topology, optional
        The machine's; needed when ``text`` has a word in it (without one the terms are CPU lists,
        kept in the order written and not checked against a machine).
    allowed : iterable of int, optional
        The CPUs that may be chosen (default: the topology's ``allowed``).
    minimum : int
        The fewest CPUs the selection must choose.

    Returns
    -------
    tuple of int
        In topology order when ``text`` has a word, else in the order written.

    Raises
    ------
    InputError
        For a malformed selection, a group that does not exist (naming those that do), a word the
        topology cannot honour (sysfs hides its level), CPUs that may not be chosen, or fewer than
        ``minimum`` CPUs.
    """
    terms = parse(text)
    words = any(t.word for t in terms)
    machine = None
    if topology is None:
        if words:
            raise InputError(f"CPU selection {_shown(text)} needs the machine's topology")
        out = combine((t.op, t.cpus) for t in terms)
    else:
        machine = _Machine(topology, allowed)
        out = combine((t.op, _word_cpus(machine, t, text) if t.word else _list_cpus(machine, t, text))
                      for t in terms)
        if words:
            rank = {c: i for i, c in enumerate(machine.cpus)}
            out.sort(key=rank.__getitem__)
    if len(out) < minimum:
        _refuse_too_few(text, out, minimum, machine, terms)
    return tuple(out)


def _refuse_too_few(text, out, minimum, machine, terms):
    chose = f"only CPU {_cpulist.format(out)}" if out else "no CPU"
    counts = [] if machine is None else [
        f"{w} {len([k for k in machine.groups(w) if k is not None])}"
        for w in dict.fromkeys(t.word for t in terms if t.word in GROUPS and t.k is None)]
    have = f" (one CPU per group; groups here: {', '.join(counts)})" if counts else ""
    raise InputError(f"CPU selection {_shown(text)} chose {chose}; need at least {minimum} CPUs{have}")


__all__ = ["GROUPS", "WORDS", "Term", "combine", "is_selection", "parse", "select"]
