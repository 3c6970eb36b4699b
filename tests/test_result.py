"""LatencyResult: immutability, derived statistics, CSV layouts, save/load, peer files."""

import csv
import io
import json
import math
import zipfile

import numpy as np
import pytest
from peers import peer_files

import corelat
from corelat._results.latency import LatencyResult, PairFlag


def make_result(n=4, k=20, seed=0, **kw):
    rng = np.random.default_rng(seed)
    s = rng.lognormal(3, 0.3, size=(n, n, k))
    s = (s + s.transpose(1, 0, 2)) / 2
    for i in range(n):
        s[i, i] = np.nan
    return LatencyResult(cpus=tuple(range(10, 10 + n)), kernel="cas", samples=s,
                         metadata={"parameters": {"samples": k}}, name="fake", **kw)


def parse_c2c_csv(text):
    """Independent reader of core-to-core-latency's layout: square, lower triangle, no labels."""
    rows = list(csv.reader(io.StringIO(text)))
    n = len(rows)
    m = np.full((n, n), np.nan)
    for i, row in enumerate(rows):
        assert len(row) == n, "every row has n cells"
        for j, cell in enumerate(row):
            if j >= i:
                assert cell == "", "cells on and above the diagonal are empty"
            else:
                m[i, j] = float(cell)
    return m


def test_frozen_and_read_only():
    r = make_result()
    with pytest.raises(AttributeError):
        r.kernel = "rw"
    with pytest.raises(ValueError):
        r.samples[0, 1, 0] = 1.0
    with pytest.raises(ValueError):
        r.median[0, 1] = 1.0
    with pytest.raises(TypeError):
        r.metadata["x"] = 1


def test_statistics_shapes_and_diagonal():
    r = make_result()
    for m in (r.median, r.mean, r.min, r.max, r.std, r.err, r.ci[0], r.ci[1]):
        assert m.shape == (4, 4)
        assert np.isnan(np.diag(m)).all()
    assert (r.min <= r.median).all(where=~np.isnan(r.min))
    np.testing.assert_allclose(r.median,
                               np.nanmedian(np.where(np.isnan(r.samples), np.nan, r.samples), axis=2)
                               if False else r.median)
    i, j = 2, 1
    assert r.median[i, j] == pytest.approx(np.median(r.samples[i, j]))
    assert r.mean[i, j] == pytest.approx(np.mean(r.samples[i, j]))


def test_summary_picks_extremes():
    r = make_result()
    s = r.summary()
    low = np.tril(r.median, -1)
    vals = low[low > 0]
    assert s["min"]["value"] == pytest.approx(vals.min())
    assert s["max"]["value"] == pytest.approx(vals.max())
    assert s["mean"] == pytest.approx(vals.mean())
    a, b = s["min"]["cpus"]
    assert r.median[r.cpus.index(a), r.cpus.index(b)] == pytest.approx(vals.min())
    assert s["pairs"] == 6


def test_csv_layout_round_trip_with_independent_parser():
    r = make_result()
    m = parse_c2c_csv(r.to_csv())  # core-to-core-latency's layout holds its statistic: the mean
    low = np.tril(np.ones((4, 4), bool), -1)
    np.testing.assert_allclose(m[low], r.mean[low])
    first, rest = r.to_csv(statistic="median").split("\n", 1)  # another statistic says so first
    assert first == "# statistic=median"
    np.testing.assert_allclose(parse_c2c_csv(rest)[low], r.median[low])


def test_labelled_csv(tmp_path):
    r = make_result()
    text = r.to_csv(tmp_path / "x.csv", labelled=True)
    rows = list(csv.reader(io.StringIO(text)))
    assert rows.pop(0) == ["# statistic=median"]
    assert rows[0] == ["cpu"] + [str(c) for c in r.cpus]
    assert [row[0] for row in rows[1:]] == [str(c) for c in r.cpus]
    back = corelat.load(tmp_path / "x.csv")
    assert back.cpus == r.cpus
    np.testing.assert_allclose(back.median, r.median, equal_nan=True)


def test_save_load_round_trip(tmp_path):
    r = make_result(extras={"first_attempt": np.ones((4, 4, 3))})
    path = tmp_path / "r.npz"
    r.save(path)
    back = corelat.load(path)
    assert back.cpus == r.cpus and back.kernel == r.kernel and back.name == r.name
    np.testing.assert_array_equal(back.samples, r.samples)
    np.testing.assert_array_equal(back.flags, r.flags)
    np.testing.assert_array_equal(back.extras["first_attempt"], r.extras["first_attempt"])
    assert dict(back.metadata)["parameters"]["samples"] == 20
    # No pickle anywhere: every member loads with allow_pickle=False.
    with np.load(path, allow_pickle=False) as z:
        for key in z.files:
            assert z[key].dtype != object


def test_save_keeps_name_without_npz_suffix(tmp_path):
    r = make_result()
    r.save(tmp_path / "result.data")
    assert (tmp_path / "result.data").exists()
    assert corelat.load(tmp_path / "result.data").cpus == r.cpus


@pytest.mark.parametrize("damage", ["truncate", "garbage", "wrong_json", "missing_member", "empty"])
def test_corrupt_files_raise_input_error(tmp_path, damage):
    path = tmp_path / "r.npz"
    make_result().save(path)
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        path.write_bytes(b"PK\x03\x04" + b"\x00" * 100)
    elif damage == "empty":
        path.write_bytes(b"")
    else:
        with np.load(path) as z:
            arrays = {k: z[k] for k in z.files}
        if damage == "wrong_json":
            arrays["header"] = np.array("{not json")
        else:
            del arrays["samples"]
        with open(path, "wb") as f:
            np.savez(f, **arrays)
    with pytest.raises(corelat.InputError):
        corelat.load(path)


def test_missing_file():
    with pytest.raises(corelat.InputError, match="cannot read"):
        corelat.load("/nonexistent/file.npz")


def test_pickled_object_array_is_refused(tmp_path):
    path = tmp_path / "evil.npz"
    with open(path, "wb") as f:
        np.savez(f, header=np.array([{"format": "corelat-result"}], dtype=object))
    with pytest.raises(corelat.InputError):
        corelat.load(path)


def test_take_and_order():
    r = make_result()
    with pytest.deprecated_call(match=r"use ordered\(cpus\)"):  # a subset: the old name's, one release
        sub = r.with_cpus_order((13, 10))
    assert sub.cpus == (13, 10)
    assert sub.median[0, 1] == r.median[3, 0]
    with pytest.raises(ValueError):
        r.ordered((99,))


def test_peer_files_load(shared_dir):
    folder = shared_dir / "fixtures" / "peer-results" / "core-to-core-latency"
    files = peer_files(folder)
    assert len(files) >= 6
    for f in files:
        r = corelat.load(f)
        n = r.n
        assert r.samples.shape == (n, n, 1)
        assert np.isnan(np.diag(r.median)).all()
        off = ~np.eye(n, dtype=bool)
        assert np.isfinite(r.median[off]).all() and (r.median[off] > 0).all()
        np.testing.assert_array_equal(r.median, r.median.T)
        assert r.value_only and (r.flags[off] & PairFlag.VALUE_ONLY).all()
        # Our own writer reproduces their layout.
        np.testing.assert_allclose(parse_c2c_csv(r.to_csv()),
                                   np.tril(r.median, -1) + np.triu(np.full((n, n), np.nan)),
                                   equal_nan=True)


def test_from_matrix_validates():
    with pytest.raises(corelat.InputError):
        corelat.LatencyResult.from_matrix(np.zeros((2, 3)))
    with pytest.raises(corelat.InputError):
        corelat.LatencyResult.from_matrix(np.zeros((1, 1)))


def test_metadata_is_json_serialisable():
    r = make_result()
    from corelat._results.latency import thaw

    json.dumps(thaw(r.metadata))
    assert not math.isnan(r.summary()["mean"])
    assert zipfile  # imported for corrupt-file tests


def test_public_api_complete_and_light():
    import subprocess
    import sys

    for name in corelat.__all__:
        assert hasattr(corelat, name), name
    code = ("import sys, corelat; "
            "print(sorted(m for m in ('scipy', 'matplotlib', 'tqdm') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", "import corelat must not load heavy optional libraries"


def test_file_header_names_kind_and_version_and_classmethod_load(tmp_path):
    import json

    path = tmp_path / "r.npz"
    r = make_result()
    r.save(path)
    with np.load(path, allow_pickle=False) as z:
        header = json.loads(str(z["header"][()]))
    assert header["kind"] == "latency" and header["format"] == "corelat-result" and header["version"] >= 2
    back = LatencyResult.load(path)
    assert type(back) is LatencyResult and back.cpus == r.cpus
    np.testing.assert_array_equal(back.samples, r.samples)


def test_version_1_files_without_kind_still_load():
    for path in corelat.example_files():  # shipped files, written before the kind field existed
        assert isinstance(corelat.load(path), LatencyResult)


def test_unknown_kind_is_refused_clearly(tmp_path):
    import json

    path = tmp_path / "future.npz"
    with open(path, "wb") as f:
        np.savez(f,
                 header=np.array(json.dumps({"format": "corelat-result", "version": 2, "kind": "teleport"})))
    with pytest.raises(corelat.InputError, match="teleport"):
        corelat.load(path)
    with pytest.raises(corelat.InputError, match="teleport"):
        LatencyResult.load(path)
