"""core-to-core-latency's text output (what it prints on stderr, pasted into a file): read as means."""

import numpy as np
import pytest
from peers import PEERS

from corelat import load
from corelat._core.errors import InputError

PPC970 = "IBM PPC970 2.2 @ 1.8GHz x2.csv"


def table(ids, cells, symmetric=True):
    """The table as its run_bench prints it (src/bench.rs): a header of the CPU ids, then one row per
    CPU, ``" {mean:>4.0}±{err:<2.0}"`` per measured pair; an asymmetric bench leaves 8 blanks on the
    diagonal. ``cells[(i, j)]`` = (mean, err) by CPU id."""
    lines = ["    {: >3}".format("") + "".join(" {: >4}{: >3}".format(j, "") for j in ids)]
    for i in ids:
        row = f"    {i: >3}"
        for j in ids:
            if (symmetric and ids.index(i) <= ids.index(j)) or i == j:
                row += "" if symmetric else " " * 8
                continue
            mean, err = cells[(i, j)]
            row += f" {mean: >4.0f}±{err: <2.0f}"
        lines.append(row)
    return "\n".join(lines) + "\n"


IDS = [0, 2, 4, 6]  # --cores 0,2,4,6: the ids it measured, not 0..n-1
CAS = {(2, 0): (52, 1), (4, 0): (61, 0), (4, 2): (60, 2), (6, 0): (63, 0), (6, 2): (64, 0), (6, 4): (55, 9)}
HEAD = ("CPU: Intel(R) Xeon(R) CPU @ 2.30GHz\nNum cores: 4\nNum iterations per samples: 1000\n"
        "Num samples: 300\n\n1) CAS latency on a single shared cache line\n\n")
SUMMARY = ("\n    Min  latency: 51.8ns ±0.6 cores: (2,0)\n    Max  latency: 64.1ns ±0.4 cores: (6,2)\n"
           "    Mean latency: 59.2ns\n")
FOUR = HEAD + table(IDS, CAS) + SUMMARY


def write(tmp_path, text, name="out.txt"):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_the_ppc970_file_of_the_peers_is_their_text_output(shared_dir):
    r = load(shared_dir / PEERS / PPC970)
    assert r.n == 2 and r.cpus == (0, 1) and r.value_only
    assert r.median[1, 0] == r.median[0, 1] == 576
    md = r.metadata
    assert md["source"] == "core-to-core-latency text" and md["statistic"] == "mean"
    assert md["round_trips"] == 5000 and md["samples"] == 300 and md["rdtsc"] is False
    assert r.kernel == "cas"  # its only bench then: a CAS ping-pong
    assert any("±" in n for n in r.notes) and not r.warnings  # the error it printed is said to be left out


def test_a_four_core_output_with_cores_chosen(tmp_path):
    r = load(write(tmp_path, FOUR, "xeon.txt"))
    assert r.name == "xeon" and r.cpus == tuple(IDS) and r.kernel == "cas"
    for (i, j), (mean, _) in CAS.items():
        a, b = IDS.index(i), IDS.index(j)
        assert r.median[a, b] == r.median[b, a] == mean
    assert np.isnan(np.diag(r.median)).all()
    md = r.metadata
    assert md["cpu_model"] == "Intel(R) Xeon(R) CPU @ 2.30GHz"
    assert md["round_trips"] == 1000 and md["samples"] == 300 and md["statistic"] == "mean"
    assert md["printed_mean_ns"] == 59.2


def test_ansi_colours_crlf_and_a_fenced_paste_are_read(tmp_path):
    coloured = FOUR.replace("±", "\x1b[1m±\x1b[0m").replace("52", "\x1b[1m52\x1b[0m")
    text = "```\n$ core-to-core-latency 1000 --cores 0,2,4,6\n" + coloured + "```\n"
    r = load(write(tmp_path, text.replace("\n", "\r\n")))
    assert r.cpus == tuple(IDS) and r.median[1, 0] == 52


def test_a_one_way_table_is_asymmetric(tmp_path):
    cells = {(i, j): (10 + i + 3 * j, 0) for i in IDS for j in IDS if i != j}
    text = (HEAD.replace("1) CAS latency on a single shared cache line",
                         "Reading the clock via RDTSC takes 7.12ns\n\n"
                         "3) Message passing. One writer and one reader on many cache line")
            + table(IDS, cells, symmetric=False) + "\n    Mean latency: 20.0ns\n")
    r = load(write(tmp_path, text))
    assert r.kernel == "oneway"
    for (i, j), (mean, _) in cells.items():
        assert r.median[IDS.index(i), IDS.index(j)] == mean


def test_several_benches_read_the_first_and_say_so(tmp_path):
    rw = {k: (v[0] + 30, 0) for k, v in CAS.items()}
    text = FOUR + ("\n2) Single-writer single-reader latency on two shared cache lines\n\n"
                   + table(IDS, rw) + SUMMARY.replace("59.2", "89.2"))
    r = load(write(tmp_path, text))
    assert r.kernel == "cas" and r.median[1, 0] == 52
    assert any("2 tables" in w and "rw" in w for w in r.metadata["warnings"])


def test_the_csv_it_printed_beside_the_table_gives_the_full_values(tmp_path):
    # `core-to-core-latency --csv > out.txt 2>&1`: the table (whole ns) then the CSV of the same means.
    csv = ",,,\n52.25,,,\n61.1,60.4,,\n63.0,64.3,55.2,\n"
    r = load(write(tmp_path, FOUR + csv))
    assert r.median[1, 0] == 52.25 and r.median[3, 2] == 55.2
    wrong = csv.replace("52.25", "58.0")  # not the table's 52: another run's CSV
    with pytest.raises(InputError, match="CSV lines .* do not match"):
        load(write(tmp_path, FOUR + wrong))


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace("Num cores: 4", "Num cores: 5"), "header names 4 CPUs.*Num cores.* 5"),
    (lambda t: t.rsplit("      6", 1)[0], "truncated"),
    (lambda t: t.replace("      4   61", "      5   61"), "row for CPU 5.*expected CPU 4"),
    (lambda t: t.replace("60±2", "60±2     7±1"), "3 values.*expected 2"),
    (lambda t: t.replace("60±2", "sixty"), "'sixty' is not a mean±error cell"),
    (lambda t: t.replace("60±2", "-60±2"), "not a latency"),
    (lambda t: t.replace("60±2", "NaN±2"), "not a latency"),
    (lambda t: t.replace("           0       2", "           0       0"), "appears twice"),
    (lambda t: t.split("           0")[0], "no table"),
    (lambda t: t.replace("Num cores: 4", "Num cores: four"), "Num cores.*'four'"),
    (lambda t: t.replace("Num samples: 300", "Num samples: 300\nNum samples: 30"), "Num samples.*twice"),
    (lambda t: t.replace("Mean latency: 59.2ns", "Mean latency: 95.2ns"), None),  # a warning, not refused
])
def test_garbled_outputs_are_refused_clearly(tmp_path, edit, message):
    path = write(tmp_path, edit(FOUR))
    if message is None:
        r = load(path)
        assert any("printed mean" in w for w in r.metadata["warnings"])
        return
    with pytest.raises(InputError, match=message) as e:
        load(path)
    assert str(path) in str(e.value)


def test_a_header_of_a_million_cpus_is_refused_before_allocating(tmp_path):
    ids = " ".join(str(k) for k in range(10**6))
    with pytest.raises(InputError, match="truncated"):
        load(write(tmp_path, f"Num cores: 1000000\nNum samples: 3\n\n{ids}\n  0\n  1  5±0\n"))
