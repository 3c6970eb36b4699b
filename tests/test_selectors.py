"""CPU selections by topology (``--cpus cores``, ``cpus="node:0+node:1-smt"``).

The grammar is checked with hypothesis against a reference written here from the README's words,
over the real sysfs dumps of hwloc's test suite (SMT machines, sparse ids, offline CPUs, hybrid
cores); every malformed or impossible selection against its message; and the live machine with
``cores`` and ``node:0`` through :func:`corelat.measure` and the command line.
"""

import os
import re

import pytest
from conftest import HWLOC_DUMPS, ByName, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import corelat
from corelat._core.errors import InputError
from corelat._system import cpulist
from corelat._system.selectors import is_selection, parse, select
from corelat._system.topology import Topology

DUMPS = HWLOC_DUMPS
GROUP_WORDS = ("package", "die", "node", "l3", "l2")
CPUS = sorted(os.sched_getaffinity(0))


# ---------------------------------------------------------------------------------------------
# The reference: the README's sentences, applied to records() with sets and sorted().


def _key(row):
    """Topology order, as the README says it: package, node, L3, (L2,) core, then the CPU id."""
    return tuple((1, 0) if row[k] is None else (0, row[k]) for k in ("package", "node", "l3", "l2", "core")) \
        + (row["cpu"],)


def _level(row, word):
    if word == "die":
        return None if row["die"] is None or row["package"] is None else (row["package"], row["die"])
    return row["core" if word in ("cores", "smt") else word]


class Reference:
    def __init__(self, topo):
        self.rows = sorted(topo.records(), key=_key)

    def hidden(self, word):
        return any(_level(r, word) is None for r in self.rows)

    def numbered(self, word):
        """K -> the CPUs of group K."""
        groups = {}
        for r in self.rows:
            groups.setdefault(_level(r, word), set()).add(r["cpu"])
        if word in ("package", "node"):
            return groups
        return dict(enumerate(groups.values()))  # insertion order is topology order

    def word(self, word, k):
        """The CPUs of one word term as a set, or None where it must be refused."""
        if word == "all":
            return {r["cpu"] for r in self.rows}
        if self.hidden(word):
            return None
        if word in ("cores", "smt"):
            firsts = {r["core"] for r in self.rows}  # a core's label is its smallest online CPU
            return firsts if word == "cores" else {r["cpu"] for r in self.rows} - firsts
        if k is not None:
            return self.numbered(word).get(k)
        firsts = {}
        for r in self.rows:
            firsts.setdefault(_level(r, word), r["cpu"])
        return set(firsts.values())

    def evaluate(self, terms):
        """terms: (op, word, k, cpus) → CPUs in the order the README gives, or None for an error."""
        chosen = []
        for op, word, k, cpus in terms:
            if word is None:
                got = list(cpus)
            else:
                got = self.word(word, k)
                if got is None:
                    return None
            if op == "-":
                chosen = [c for c in chosen if c not in set(got)]
            else:
                chosen += [c for c in (got if word is None else sorted(got)) if c not in chosen]
        if any(t[1] for t in terms):
            rank = {r["cpu"]: i for i, r in enumerate(self.rows)}
            chosen = sorted(set(chosen), key=rank.get)
        return list(dict.fromkeys(chosen))


@st.composite
def selections(draw, topo):
    """(text, terms) of a random selection over ``topo``: words, GROUP:K with K that exist and some
    that do not, and CPU lists of online CPUs, joined by +, ',' and -."""
    ref = Reference(topo)
    online = list(topo.cpus)
    terms, parts = [], []
    for i in range(draw(st.integers(1, 4))):
        op = "+" if i == 0 else draw(st.sampled_from("+,-"))
        kind = draw(st.sampled_from(["word", "group", "list"]))
        if kind == "list":
            cpus = draw(st.lists(st.sampled_from(online), min_size=1, max_size=6, unique=True))
            if terms and terms[-1][1] is None and op in "-,":
                op = "+"  # '-' or ',' between digits continue the list before (0-3, all-0,1)
            text = cpulist.format(cpus) if draw(st.booleans()) else ",".join(map(str, cpus))
            term = (op, None, None, tuple(cpulist.parse(text)))
        elif kind == "word":
            word = draw(st.sampled_from(["all", "cores", "smt", *GROUP_WORDS]))
            term, text = (op, word, None, ()), word
        else:
            word = draw(st.sampled_from(GROUP_WORDS))
            known = sorted(k for k in ref.numbered(word) if isinstance(k, int))
            k = draw(st.sampled_from(known + [max(known, default=0) + 1, 999]))
            term, text = (op, word, k, ()), f"{word}:{k}"
            if draw(st.booleans()):
                text = text.upper()
        terms.append(term)
        parts.append(("" if i == 0 else op) + text)
    return "".join(parts), terms


@pytest.fixture(scope="module")
def dumps(hwloc_topology):
    return ByName(hwloc_topology)


@pytest.mark.parametrize("name", DUMPS)
def test_selections_match_the_reference_on_real_dumps(dumps, name):
    topo = dumps[name]
    ref = Reference(topo)

    @settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(selections(topo))
    def check(case):
        text, terms = case
        want = ref.evaluate(terms)
        if want is None:
            with pytest.raises(InputError):
                select(text, topo)
        else:
            assert list(select(text, topo)) == want, text

    check()


@pytest.mark.parametrize("name", DUMPS)
def test_cores_and_smt_split_every_cpu_and_groups_keep_topology_order(dumps, name):
    topo = dumps[name]
    order, _ = topo.order(topo.cpus)
    if Reference(topo).hidden("cores"):
        with pytest.raises(InputError, match="cannot be honoured"):
            select("cores", topo)
        return
    cores, smt = select("cores", topo), select("smt", topo)
    assert sorted(cores + smt) == list(topo.cpus) and not set(cores) & set(smt)
    assert len(cores) == topo.summary()["cores"]
    assert select("all-smt", topo) == cores and select("all", topo) == order
    for word in ("package", "node", "l3"):
        if not Reference(topo).hidden(word):
            firsts = select(word, topo)
            assert list(firsts) == [c for c in order if c in firsts]  # the map of the groups, in order
            assert len(firsts) == len({r[word] for r in topo.records()})


def test_sparse_node_numbers_are_the_kernels(dumps):
    topo = dumps["16amd64-8n2c"]
    nodes = sorted({r["node"] for r in topo.records()})
    for n in nodes:
        assert set(select(f"node:{n}", topo)) == {r["cpu"] for r in topo.records() if r["node"] == n}
    with pytest.raises(InputError, match=rf"no node 99 .*node numbers: {cpulist.format(nodes)}"):
        select("node:99", topo)


def test_offline_cpus_are_never_chosen_and_refused_in_lists(dumps):
    topo = dumps["16em64t-4s2c2t-offlines"]
    assert topo.offline and not set(select("all", topo)) & set(topo.offline)
    with pytest.raises(InputError, match=rf"CPU {topo.offline[0]} of .* may not be chosen"):
        select(f"cores+{topo.offline[0]}", topo)


def test_hybrid_cores_take_one_thread_of_each_core(dumps):
    topo = dumps["20em64t-hybrid-1p6c2t+2ca4co1t"]
    cores = select("cores", topo)
    assert len(cores) == 14 and len(select("smt", topo)) == 6
    assert len(select("l2", topo)) == len({r["l2"] for r in topo.records()})


# ---------------------------------------------------------------------------------------------
# Errors: every malformed or impossible selection, with what it says


def _rows(n=8, *, smt=2, nodes=2, core=True, l3=True, die=True):
    rows = []
    for cpu in range(n):
        first = cpu - cpu % smt
        rows.append({"cpu": cpu, "package": 0, "die": 0 if die else None, "cluster": None,
                     "core": first if core else None, "core_id": first if core else None,
                     "l2": first if core else None, "l3": (0 if cpu < n // 2 else n // 2) if l3 else None,
                     "node": cpu * nodes // n, "nodes": (cpu * nodes // n,),
                     "siblings": tuple(range(first, first + smt)) if core else None,
                     "thread": cpu % smt if core else None, "allowed": True, "core_type": None,
                     "capacity": None})
    return rows


TOPO = Topology(_rows(), root="/made-up")
HIDDEN = Topology(_rows(core=False, l3=False, die=False), root="/container")


@pytest.mark.parametrize("text, message", [
    ("", "empty CPU selection"),
    ("   ", "empty CPU selection"),
    ("+", "starts"),
    ("+cores", "starts"),
    ("-smt", "starts"),
    ("cores+", "ends with an operator"),
    ("cores-", "ends with an operator"),
    ("cores++smt", "two operators in a row"),
    ("cores+-smt", "two operators in a row"),
    ("cores,,smt", "two operators in a row"),
    ("cores smt", "no '\\+', ',' or '-' between"),
    ("node:0 1", "no '\\+', ',' or '-' between"),
    ("core", "unknown word 'core'"),
    ("nodes", "unknown word 'nodes'"),
    ("l4", "unknown word 'l4'"),
    ("cores:1", "'cores' takes no ':K'"),
    ("all:0", "'all' takes no ':K'"),
    ("node:", "needs a group number"),
    ("node:-1", "needs a group number"),
    ("l3:x", "needs a group number"),
    ("node:0node:1", "follows"),
    ("0node:1", "follows"),
    ("cores;reboot", "unexpected ';'"),
    ("cores+(0)", "unexpected '\\('"),
    ("cores+ｃ", "unexpected"),
    ("cores+3-1", "not a valid range"),
    ("cores+1-2-3", "not a CPU number or range"),
    ("cores+0-15:0", "not a valid range"),
    ("node:7", r"no node 7 on this machine \(node numbers: 0-1\)"),
    ("node:0+node:7", "no node 7"),
    ("package:1", r"no package 1 .*package numbers: 0\)"),
    ("l3:2", r"no l3 2 .*l3 groups, counted in topology order: 0-1\)"),
    ("l2:4", r"no l2 4 .*: 0-3\)"),
    ("die:1", "no die 1"),
    ("node:99999999999", "node 9+ does not exist"),
    ("cores+8", "CPU 8 of '8' may not be chosen"),
    ("cores-42", "CPU 42 of '42' may not be chosen"),
    ("package", r"chose only CPU 0; need at least 2 CPUs \(one CPU per group; groups here: package 1\)"),
    ("l3-all", "chose no CPU"),
    ("node:0-0,1,2", "chose only CPU 3"),
    ("x" * 20_000, "too long"),
])
def test_malformed_or_impossible_selections_say_why(text, message):
    with pytest.raises(InputError, match=message):
        select(text, TOPO, minimum=2)


@pytest.mark.parametrize("text", ["cores", "smt", "l3", "l3:0", "l2", "die", "die:0", "node:0-smt",
                                  "all-smt", "0-3+cores"])
def test_selections_a_hidden_topology_cannot_honour_say_which_and_why(text):
    with pytest.raises(InputError, match=r"cannot be honoured here: sysfs does not say the .* of CPU 0-7 "
                                         r"\(no readable .*\); here only all, package, node and CPU lists"):
        select(text, HIDDEN)


def test_what_a_hidden_topology_still_honours():
    assert select("all", HIDDEN) == tuple(range(8))
    assert select("node", HIDDEN) == (0, 4)
    assert select("node:1+0", HIDDEN) == (0, 4, 5, 6, 7)
    assert select("package:0-3", HIDDEN) == (0, 1, 2, 4, 5, 6, 7)


def test_grammar_details():
    assert select("node:0-3", TOPO) == (0, 1, 2)  # after a selector '-' removes: node 0 without CPU 3
    assert select("0-3-smt", TOPO) == (0, 2)  # a range, then a removal
    assert select("all-0,1", TOPO) == select("all-0-1", TOPO) == tuple(range(2, 8))  # a list runs on
    assert select("7,6,node:0", TOPO) == (0, 1, 2, 3, 6, 7)  # a word: topology order
    assert select("7,6+5", TOPO) == (7, 6, 5)  # lists only: the order written
    assert select(" Node:1 + CORES ", TOPO) == (0, 2, 4, 5, 6, 7)
    assert select("0-7:2+smt-l3:1", TOPO) == (0, 1, 2, 3)
    assert select("7+6") == (7, 6)  # without a word no topology is needed...
    with pytest.raises(InputError, match="needs the machine's topology"):
        select("cores")  # ... with one it is
    assert [t.text for t in parse("node:0+1-3,cores")] == ["node:0", "1-3", "cores"]
    assert [t.op for t in parse("node:0+1-3,cores-smt")] == ["+", "+", "+", "-"]
    assert not is_selection("0,2,4-7") and is_selection("cores") and is_selection("0+1")


def test_allowed_restricts_what_may_be_chosen():
    assert select("cores", TOPO, allowed=[1, 2, 3, 5]) == (1, 2, 5)  # the first allowed thread of each core
    assert select("smt", TOPO, allowed=[1, 2, 3, 5]) == (3,)
    with pytest.raises(InputError, match=r"none of the CPUs of node:1 \(4-7\) may be chosen"):
        select("node:1", TOPO, allowed=[0, 1])


# ---------------------------------------------------------------------------------------------
# The live machine (this one: its topology as sysfs gives it)


def _live(text):
    return select(text, corelat.topology(), allowed=CPUS)


def test_resolve_cpus_reads_selections_and_still_lists(monkeypatch):
    from corelat._system import validate

    assert validate.resolve_cpus(",".join(map(str, reversed(CPUS[:2])))) == tuple(reversed(CPUS[:2]))
    with pytest.raises(InputError, match="unknown word 'bogus'"):
        validate.resolve_cpus("bogus")
    with pytest.raises(InputError, match="no node 4096"):
        validate.resolve_cpus("node:4096")
    with pytest.raises(InputError, match="chose no CPU"):
        validate.resolve_cpus("all-all")
    assert validate.resolve_cpus("all", minimum=1) == _live("all")


@pytest.mark.hw
@pytest.mark.skipif(len(CPUS) < 2, reason="needs at least 2 allowed CPUs")
@pytest.mark.parametrize("text", ["cores", "node:0"])
def test_measure_records_the_selection_and_the_cpus_it_chose(tmp_path, text):
    want = _live(text)
    if len(want) < 2:
        pytest.skip(f"{text} chooses {len(want)} CPU here")
    r = corelat.measure(cpus=text, round_trips=10, samples=3, progress=False)
    assert r.cpus == want
    sel = r.metadata["cpu_selection"]
    assert sel["selector"] == text and list(sel["cpus"]) == list(want) and list(sel["of"]) == CPUS
    r.save(tmp_path / "r.npz")
    assert corelat.load(tmp_path / "r.npz").metadata["cpu_selection"]["selector"] == text
    plain = corelat.measure(cpus=list(want), round_trips=10, samples=3, progress=False)
    assert plain.metadata["cpu_selection"]["selector"] is None


@pytest.mark.hw
@pytest.mark.skipif(len(CPUS) < 2, reason="needs at least 2 allowed CPUs")
@pytest.mark.parametrize("text", ["cores", "node:0"])
def test_cli_header_says_the_selection_and_its_cpus(text):
    want = _live(text)
    if len(want) < 2:
        pytest.skip(f"{text} chooses {len(want)} CPU here")
    p = run_cli("--cpus", text, 10, 3)
    assert p.returncode == 0, p.stderr
    line = f"CPUs: {text} ({cpulist.format(want)} of {cpulist.format(CPUS)})"
    assert line in p.stdout.splitlines(), p.stdout


@pytest.mark.parametrize("text, message", [("node:4096", "no node 4096"), ("cores+", "ends with"),
                                           ("all-all", "chose no CPU")])
def test_cli_refuses_bad_selections_with_exit_2(text, message):
    p = run_cli("--cpus", text, 10, 3)
    assert p.returncode == 2 and message in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_help_gives_the_grammar():
    import importlib

    from corelat import cli

    for name in ("measure", "smt", "placement", "locks", "check"):
        module = importlib.import_module(f"corelat.cli.{cli.COMMANDS[name][0]}")
        flat = re.sub(r"\s+", " ", cli._parser(name, module).format_help())
        assert "node:0+node:1-smt" in flat and "GROUP:K" in flat, (name, flat)


def test_old_files_without_a_selection_still_load():
    r = corelat.load(corelat.example_files()[0])
    assert "cpu_selection" not in r.metadata
    from corelat.cli.cmd_measure import cpus_text

    assert cpus_text(r) == f"CPUs: {cpulist.format(r.cpus)}"


def test_options_check_the_grammar_before_any_machine_is_read():
    from corelat._measure.options import SweepOptions

    with pytest.raises(InputError, match="unknown word 'node7'"):
        SweepOptions.request("node7")  # a fleet's ranks refuse it before one node reads its topology
    assert SweepOptions.request("node:7").cpus == "node:7"  # which groups exist: each node says


@pytest.mark.hw
@pytest.mark.skipif(len(CPUS) < 2, reason="needs at least 2 allowed CPUs")
def test_locks_and_smt_take_selections():
    p = run_cli("locks", "cores", "-k", "inc-atomic-relaxed", "-d", "0.01", "--json")
    assert p.returncode == 0, p.stderr
    assert '"cpus"' in p.stdout and "Traceback" not in p.stderr
    p = run_cli("smt", "--cpus", "cores", 10, 3)  # one thread per core: no sibling pairs, said, exit 0
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    p = run_cli("smt", "--cpus", "node:4096", 10, 3)
    assert p.returncode == 2 and "no node 4096" in p.stderr, p.stderr


@pytest.mark.skipif(len(CPUS) < 2, reason="needs at least 2 allowed CPUs")
def test_the_sweep_records_the_selection_with_a_stand_in_measurer():
    import numpy as np

    from corelat._measure import sweep as _sweep

    want = _live("all")
    r = _sweep.measure_with(lambda a, b, k: np.full(k, 10.0), "all", samples=6)
    assert r.cpus == want
    sel = r.metadata["cpu_selection"]
    assert (sel["selector"], list(sel["cpus"]), list(sel["of"])) == ("all", list(want), CPUS)
    r = _sweep.measure_with(lambda a, b, k: np.full(k, 10.0), CPUS[:2], samples=6)
    assert r.metadata["cpu_selection"]["selector"] is None


def _two_packages_of_die_0(root):
    """A sysfs tree of 2 packages of 2 CPUs each, every CPU's die_id 0 (dies are numbered within
    their package, as the kernel numbers them)."""
    cpu = root / "sys/devices/system/cpu"
    cpu.mkdir(parents=True)
    (cpu / "online").write_text("0-3\n")
    for c in range(4):
        package = c // 2
        mates = f"{2 * package}-{2 * package + 1}\n"
        t = cpu / f"cpu{c}/topology"
        t.mkdir(parents=True)
        files = {"physical_package_id": f"{package}\n", "die_id": "0\n", "core_id": f"{c % 2}\n",
                 "thread_siblings_list": f"{c}\n", "core_siblings_list": mates, "die_cpus_list": mates}
        for name, text in files.items():
            (t / name).write_text(text)
    for package in range(2):
        node = root / f"sys/devices/system/node/node{package}"
        node.mkdir(parents=True)
        (node / "cpulist").write_text(f"{2 * package}-{2 * package + 1}\n")
    return root


def test_a_die_is_one_of_its_package_on_a_synthetic_sysfs(tmp_path):
    # Issue 34 item 14: die ids repeat across packages; a "die" key ignoring the package merged them,
    # caught only by the hwloc dumps of ../shared. This tree needs no ../shared.
    topo = corelat.topology(_two_packages_of_die_0(tmp_path))
    assert [(r["package"], r["die"]) for r in topo.records()] == [(0, 0), (0, 0), (1, 0), (1, 0)]
    assert select("die", topo) == (0, 2)
    assert select("die:0", topo) == (0, 1) and select("die:1", topo) == (2, 3)
    assert select("die - die:1", topo) == (0,)
