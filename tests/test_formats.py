"""Other tools' text matrices: c2clat, core-to-core-latency's CSV, corelat's labelled CSV."""

import numpy as np
import pytest
from peers import PEERS, peer_files

from corelat import load
from corelat._core.errors import InputError
from corelat._results.latency import PairFlag

# c2clat's README example (8 CPUs, SMT siblings n and n+4), as the tool prints it.
C2CLAT = """\
 CPU    0    1    2    3    4    5    6    7
   0    0   92   66   62   16   56   54   53
   1   92    0   50   54   53   14   49   50
   2   66   50    0   48   51   49   13   48
   3   62   54   48    0   53   50   48   13
   4   16   53   51   53    0   53   51   53
   5   56   14   49   50   53    0   49   50
   6   54   49   13   48   51   49    0   48
   7   53   50   48   13   53   50   48    0
"""


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_c2clat_table(tmp_path):
    r = load(write(tmp_path, "my laptop.txt", C2CLAT))
    assert r.name == "my laptop"
    assert r.cpus == tuple(range(8))
    assert r.kernel == "rw" and r.value_only
    assert r.metadata["source"] == "c2clat" and r.metadata["statistic"] == "min"
    m = r.median
    assert np.isnan(np.diag(m)).all()  # c2clat's 0 diagonal is "not measured"
    assert m[0, 1] == 92 and m[7, 3] == 13 and m[4, 0] == 16
    np.testing.assert_array_equal(m, m.T)
    off = ~np.eye(8, dtype=bool)
    assert (r.flags[off] & PairFlag.VALUE_ONLY).all()


def test_c2clat_subset_with_taskset_ids_and_crlf(tmp_path):
    text = " CPU   10   11\r\n  10    0   52\r\n  11   52    0\r\n\r\n"
    r = load(write(tmp_path, "subset", text))
    assert r.cpus == (10, 11)
    assert r.median[0, 1] == 52
    assert r.name == "subset"


def test_c2clat_gnuplot_output(tmp_path):
    rows = [ln.split()[1:] for ln in C2CLAT.splitlines()[1:]]
    text = ("reset\nset autoscale fix\nset cblabel \"Latency (ns)\"\nunset key\n$data << EOD\n"
            + "\n".join(" " + " ".join(f"{v:>4}" for v in row) for row in rows)
            + "\nEOD\nplot '$data' matrix with image\n")
    r = load(write(tmp_path, "plot.gp", text))
    assert r.name == "plot.gp"  # unknown extension: the whole file name
    assert r.cpus == tuple(range(8))
    assert r.median[2, 6] == 13
    assert any("CPU ids" in w for w in r.warnings)


def test_core_to_core_latency_csv_and_labelled_csv(tmp_path):
    r = load(write(tmp_path, "box.csv", ",,\n7.5,,\n30.25,40,\n"))
    # The CSV does not say which kernel.
    assert r.name == "box" and r.kernel == "unknown" and r.cpus == (0, 1, 2)
    assert r.median[2, 0] == r.median[0, 2] == 30.25
    r = load(write(tmp_path, "lab.csv", "cpu,4,6\n4,,12.5\n6,12.5,\n"))
    assert r.cpus == (4, 6) and r.median[0, 1] == 12.5


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty file"),
        ("\n  \n", "empty file"),
        (" CPU 0 1\n 0 0 5\n", "2 CPUs in the header but 1 rows"),
        (" CPU 0 1\n 0 0 5\n 1 5\n", "line 3 has 1 values, expected 2"),
        (" CPU 0 1\n 1 0 5\n 0 5 0\n", "is for CPU 1, expected CPU 0"),
        (" CPU 0 x\n 0 0 5\n x 5 0\n", "CPU label 'x' is not an integer"),
        (" CPU 0 0\n 0 0 5\n 0 5 0\n", "CPU 0 appears twice"),
        (" CPU\n", "names no CPU"),
        (" CPU 0 1\n 0 0 fast\n 1 5 0\n", "'fast' is not a number"),
        (" CPU 0 1\n 0 0 -5\n 1 5 0\n", "'-5' is not a latency"),
        (" CPU 0 1\n 0 0 nan\n 1 5 0\n", "'nan' is not a latency"),
        ("$data << EOD\n0 5\n5 0\n", "without the closing 'EOD'"),
        ("$data << EOD\n0 5\n5\nEOD\n", "line 3 has 1 values, expected 2"),
        (",,\n1,,\n2,3\n", "row 3 has 2 cells, expected 3"),
        (",1\n,\n", "values above the diagonal"),
        (",\n,\n", "no values below the diagonal"),
        ("5\n", "one row only"),
        ("hello world\n", "one row only"),
        ("cpu,0,1\n0,,1\n2,1,\n", "row 3 does not match the header"),
    ],
)
def test_corrupt_text_files_raise_input_error(tmp_path, text, message):
    with pytest.raises(InputError, match=message) as e:
        load(write(tmp_path, "bad.txt", text))
    assert "bad.txt" in str(e.value)  # the message names the file
    assert "\n" not in str(e.value)


def test_binary_and_non_utf8_files(tmp_path):
    p = tmp_path / "blob.csv"
    p.write_bytes(b"\x00\x01\x02binary")
    with pytest.raises(InputError, match="binary file"):
        load(p)
    p.write_bytes("CPU 0 1\n0 0 \xe9\n".encode("latin-1"))
    with pytest.raises(InputError, match="not UTF-8"):
        load(p)
    with pytest.raises(InputError, match="cannot read"):
        load(tmp_path / "missing.txt")


def test_every_peer_file_loads(shared_dir):
    files = peer_files(shared_dir / PEERS)  # not their index, published.csv
    assert len(files) >= 6
    for f in files:
        r = load(f)
        n = r.n
        assert n >= 2 and r.median.shape == (n, n)
        assert np.isnan(np.diag(r.median)).all()
        off = ~np.eye(n, dtype=bool)
        assert np.isfinite(r.median[off]).all()
        np.testing.assert_array_equal(r.median, r.median.T)
        assert r.name == f.stem  # e.g. "AMD Ryzen 9 5950X @ 3.40 GHz"
        # Their --csv matrices, and one text output they kept (tests/test_c2c_text.py reads it).
        text = f.name.startswith("IBM PPC970")
        assert r.metadata["source"] == "core-to-core-latency " + ("text" if text else "csv")
