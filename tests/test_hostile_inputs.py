"""Issue 24, items 6, 10 and 13: small files that asked for huge memory or time, encrypted zip
members, and the API's odd arguments (bytes paths, absurd matrices, from_matrix's rule)."""

import pathlib
import time
import tracemalloc

import numpy as np
import pytest
from conftest import run_cli

import corelat
from corelat._core import npz as _npz
from corelat._core.errors import InputError
from corelat._fleet import hostlist as _hostlist
from corelat._results import schema as _schema


def _peak(fn):
    """Peak of traced allocations (NumPy's included) while ``fn()`` runs; its error as well."""
    tracemalloc.start()
    try:
        fn()
    except InputError as e:
        err = e
    else:
        err = None
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return peak, err


# -- item 6: check the shape before allocating ---------------------------------------------------
def test_triangle_csv_of_one_cell_rows_is_refused_before_allocating(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text("x\n" * 6000)  # 12 KB; an n x n matrix of it is 288 MB
    peak, err = _peak(lambda: corelat.load(p))
    assert err is not None and "row 1 has 1 cells, expected 6000" in str(err)
    assert peak < 50 << 20


def test_c2clat_plot_of_one_value_rows_is_refused_before_allocating(tmp_path):
    p = tmp_path / "plot.gp"
    p.write_text("$data << EOD\n" + "1\n" * 6000 + "EOD\n")
    peak, err = _peak(lambda: corelat.load(p))
    assert err is not None and "has 1 values, expected 6000" in str(err)
    assert peak < 50 << 20


def test_labelled_csv_rows_are_checked_before_allocating(tmp_path):
    p = tmp_path / "l.csv"
    p.write_text("cpu," + ",".join(map(str, range(6000))) + "\n" + "0\n" * 6000)
    peak, err = _peak(lambda: corelat.load(p))
    assert err is not None and "row 2 does not match the header" in str(err)
    assert peak < 50 << 20


def test_duplicate_cpu_label_check_is_linear(tmp_path):
    p = tmp_path / "dup.csv"
    p.write_text("cpu," + ",".join(map(str, range(20000))) + ",5\n")  # quadratic: ~16 s
    t = time.monotonic()
    with pytest.raises(InputError, match="CPU 5 appears twice"):
        corelat.load(p)
    assert time.monotonic() - t < 5.0


def test_host_list_total_is_capped_before_expanding(tmp_path):
    with pytest.raises(InputError, match="more than 1,000,000 nodes"):
        _hostlist.expand("a[0-599999],b[0-599999]")
    t = time.monotonic()
    with pytest.raises(InputError, match="more than 1,000,000 nodes"):
        _hostlist.expand(",".join(f"n{k}x[0-999999]" for k in range(3000)))
    f = tmp_path / "nodes.txt"
    f.write_text("a[0-599999]\nb[0-599999]\n")  # one budget for a whole file
    with pytest.raises(InputError, match="more than"):
        _hostlist.expected_nodes(str(f))
    assert time.monotonic() - t < 10.0  # the refusals come before any name is made (before: 9 GB)
    assert len(_hostlist.expand("a[0-499999],b[0-499999]")) == 1_000_000  # the cap itself is allowed


def test_narrow_samples_are_budgeted_as_float64(tmp_path, monkeypatch):
    r = corelat.load(corelat.example_files()[0])
    header, arrays = _schema.npz_parts(r)
    arrays["samples"] = np.full((2, 2, 100_000), 50, dtype=np.int8)  # 400 KB; 3.2 MB as float64
    del arrays["median"]
    p = tmp_path / "narrow.npz"
    _npz.write(p, "latency", header, arrays)
    monkeypatch.setattr(_npz, "MAX_ARRAY_BYTES", 1 << 20)
    with pytest.raises(InputError, match="as float64; at most"):
        corelat.load(p)


# -- item 10: encrypted zip members ------------------------------------------------------------
def _encrypted(tmp_path):
    data = bytearray(pathlib.Path(corelat.example_files()[0]).read_bytes())
    for magic, at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):  # the general purpose flag's bit 0
        i = 0
        while (i := data.find(magic, i)) >= 0:
            data[i + at] |= 1
            i += 4
    p = tmp_path / "locked.npz"
    p.write_bytes(bytes(data))
    return p


def test_encrypted_members_are_refused_naming_the_file(tmp_path):
    p = _encrypted(tmp_path)
    with pytest.raises(InputError, match="locked.npz: member 'header.npy' is encrypted"):
        corelat.load(p)


@pytest.mark.parametrize("command", ["report", "plot", "compare"])
def test_encrypted_file_message_in_the_cli(tmp_path, command):
    p = _encrypted(tmp_path)
    args = [command, p, p] if command == "compare" else [command, p]
    out = run_cli(*args)
    assert out.returncode == 2, out.stderr
    assert str(p) in out.stderr and "encrypted" in out.stderr and "ZipInfo" not in out.stderr


# -- item 13: the API's odd arguments -------------------------------------------------------------
def test_load_of_a_bytes_path_raises_input_error():
    with pytest.raises(InputError, match="/etc/passwd"):
        corelat.load(b"/etc/passwd")
    assert corelat.load(corelat.example_files()[0].encode()).cpus == (0, 1)


def _huge():
    return corelat.LatencyResult(cpus=range(4), kernel="x", samples=np.full((4, 4, 1), 1e308))


def test_structure_and_compare_of_absurd_latencies_raise_input_error():
    with pytest.raises(InputError, match="cannot be read for structure"):
        corelat.structure(_huge())
    with pytest.raises(InputError, match="cannot be read for structure"):
        corelat.compare(_huge(), _huge())


@pytest.mark.parametrize("value, what", [(0.0, "every latency is 0 ns"), (np.inf, "infinite"),
                                         (-5.0, "negative latency")])
def test_from_matrix_refuses_what_load_refuses(tmp_path, value, what):
    m = np.full((3, 3), value)
    with pytest.raises(InputError, match=what):
        corelat.LatencyResult.from_matrix(m)
    # ... and what it accepts is read back: one rule for both.
    ok = corelat.LatencyResult.from_matrix(np.where(np.eye(3) > 0, 0.0, 40.0) + np.tril(np.ones(3)))
    ok.save(tmp_path / "ok.npz")
    assert corelat.load(tmp_path / "ok.npz") == ok


def test_one_way_matrices_keep_their_slack():
    m = np.array([[0, -20.0], [30.0, 0]])
    assert corelat.LatencyResult.from_matrix(m, symmetric=False).median[0, 1] == -20.0


@pytest.mark.slow
def test_samples_beyond_what_a_sweep_keeps_are_refused_unread(tmp_path):
    # Issue 24 item 6: a 3 MB file of 2 CPUs whose samples came to just under the 2 GiB cap took
    # 4.47 GB and 48 s to load. Per pair a file holds what a sweep can keep; more is refused from the
    # member's .npy header, before its data is inflated.
    k = _npz.MAX_SAMPLES_PER_PAIR + 1
    samples = np.full((2, 2, k), 30.0)
    samples[0, 0] = samples[1, 1] = np.nan
    path = tmp_path / "many.npz"
    corelat.LatencyResult(cpus=(0, 1), samples=samples, kernel="cas").save(path)
    del samples
    peak, err = _peak(lambda: corelat.load(path))
    assert err is not None and "samples per CPU pair" in str(err) and str(path) in str(err), err
    assert peak < 32 * 1024**2, peak  # the header is read, not the 128 MB of samples


def test_the_per_pair_cap_leaves_room_for_every_sweep():
    from corelat._system.validate import MAX_SAMPLES

    assert _npz.MAX_SAMPLES_PER_PAIR >= MAX_SAMPLES


def test_a_result_that_could_not_be_loaded_back_is_not_saved(tmp_path):
    # Issue 24 item 13: from_matrix accepts a matrix without any measured value (analyses describe
    # it), which save() wrote and load() then refused. Not written at all now; nothing is replaced.
    r = corelat.LatencyResult.from_matrix(np.full((3, 3), np.nan))
    path = tmp_path / "empty.npz"
    path.write_bytes(b"kept")
    with pytest.raises(InputError, match="cannot be saved"):
        r.save(path)
    assert path.read_bytes() == b"kept"
