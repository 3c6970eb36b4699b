"""The peers' folder as a whole: its index (published.csv: the publisher's facts about each file) is
not a result, and each reader that takes the folder or the index says so; the facts it states agree
with the files (data, not a measurement on this machine)."""

import numpy as np
import pytest
from peers import INDEX, PEERS, peer_files, published, published_ns

import corelat
from corelat import load
from corelat._core.errors import InputError
from corelat.cli import main

#: The factor within which the publisher's rounded median and the file's own agree (they agree within
#: 3 % for every file of the index that gives one value).
FACTOR = 1.5


def test_the_index_lists_every_result_file_and_each_loads(shared_dir):
    folder = shared_dir / PEERS
    listed = [row["file"] for row in published(folder)]
    assert sorted(listed) == [p.name for p in peer_files(folder)] and len(listed) == 20
    for name in listed:
        r = load(folder / name)
        assert r.n >= 2 and r.metadata["statistic"] == "mean"


def test_the_published_medians_agree_with_the_files(shared_dir):
    folder = shared_dir / PEERS
    judged = 0
    for row in published(folder):
        said = published_ns(row["published_median_latency"])
        if not said:  # not in the README's tables
            continue
        r = load(folder / row["file"])
        median = float(np.median(r.median[~np.eye(r.n, dtype=bool)]))
        if len(said) == 1:  # the README's one figure for the machine: the median of its pairs
            judged += 1
            assert said[0] / FACTOR <= median <= said[0] * FACTOR, (row["file"], said, median)
        else:  # a figure per latency level (8ns, 17ns, 18ns): the median is among them
            assert min(said) / FACTOR <= median <= max(said) * FACTOR, (row["file"], said, median)
    assert judged >= 10


def test_the_index_read_as_a_result_says_what_it_is_not(shared_dir):
    with pytest.raises(InputError, match=r"not a core-to-core-latency matrix.*header.*file, published_as"):
        load(shared_dir / PEERS / INDEX)


def test_a_csv_table_with_a_header_row_is_not_a_matrix(tmp_path):
    p = tmp_path / "index.csv"
    p.write_text("machine,median\nx,19ns\ny,20ns\n")
    with pytest.raises(InputError, match="not a core-to-core-latency matrix") as e:
        load(p)
    assert "cells, expected" not in str(e.value)


def test_the_folder_as_a_fleet_leaves_the_index_and_the_licence_out_and_says_so(shared_dir):
    f = corelat.fleet(shared_dir / PEERS)
    assert len(f.nodes) == 20 and not f.errors
    assert "IBM PPC970 2.2 @ 1.8GHz x2" in {n["node"] for n in f.nodes}
    notes = "\n".join(f.notes)
    assert f"{INDEX} left out" in notes and "not a core-to-core-latency matrix" in notes
    assert "LICENSE-MIT" in notes


def test_corelat_report_of_the_folder_is_its_fleet(shared_dir, capsys):
    assert main(["report", str(shared_dir / PEERS)]) == 0
    out = capsys.readouterr().out
    assert "20 nodes" in out and f"{INDEX} left out" in out
