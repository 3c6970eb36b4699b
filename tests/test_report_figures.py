"""Figures fixed on the way to the report (issue 21): titles name the CPU model, the violins' legend
and "not drawn" markers stay off the violins and inside the axes, six files compare as a grid."""

from __future__ import annotations

import numpy as np
import pytest

import corelat
from corelat import LatencyResult

pytest.importorskip("matplotlib")


@pytest.fixture(autouse=True)
def _agg():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    yield
    plt.close("all")


def _measured_like(n=4, name="vm", seed=0, spikes=True):
    rng = np.random.default_rng(seed)
    s = 100.0 + rng.standard_normal((n, n, 200))
    if spikes:
        s[1, 0, :6] = 9000.0  # preempted samples: clipped from the violins, marked on the edge
    s[np.arange(n), np.arange(n)] = np.nan
    md = {"cpu_model": "AMD EPYC 7B13", "hostname": "vm", "symmetric": False}
    return LatencyResult(cpus=tuple(range(n)), kernel="cas", samples=s, metadata=md, name=name)


def test_titles_name_the_cpu_model_not_the_host():
    import corelat.plot as cplot

    r = _measured_like()
    title = cplot.heatmap(r).get_title()
    assert title.startswith("AMD EPYC 7B13: cas kernel") and "vm" not in title.split("\n")[0]
    assert cplot.distribution(r).get_title().startswith("AMD EPYC 7B13: ")
    named = _measured_like(name="rack 3 node 7")
    assert cplot.heatmap(named).get_title().startswith("rack 3 node 7 (AMD EPYC 7B13)")


def test_violin_legend_below_the_axes_and_markers_inside():
    import corelat.plot as cplot

    ax = cplot.distribution(_measured_like(), pairs=[(1, 0), (2, 0)])
    fig = ax.figure
    fig.canvas.draw()
    box = ax.get_window_extent()
    legend = ax.get_legend().get_window_extent()
    assert legend.y1 <= box.y0, "the legend covers the violins"
    markers = [c for c in ax.collections if "not drawn" in c.get_label()]
    assert markers
    for c in markers:
        for _x, y in c.get_offset_transform().transform(c.get_offsets()):
            assert box.y0 < y < box.y1 - 3, "the 'not drawn' marker is cut by the axes' edge"
    # and above every violin: the markers do not sit on the top of the data
    top = max(float(np.max(c.get_paths()[0].vertices[:, 1])) for c in ax.collections
              if c not in markers and c.get_paths())
    marker_y = ax.transData.inverted().transform((0, markers[0].get_offset_transform().transform(
        markers[0].get_offsets())[0][1]))[1]
    assert marker_y > top


def test_compare_of_six_is_a_grid():
    import corelat.plot as cplot

    results = [_measured_like(name=f"m{i}", seed=i, spikes=False) for i in range(6)]
    fig = cplot.compare(results)
    heat = [ax for ax in fig.axes if ax.images and ax.get_xlabel()]
    assert len(heat) == 6
    rows = {round(ax.get_position().y0, 2) for ax in heat}
    assert len(rows) == 2
    w, h = fig.get_size_inches()
    assert w / h < 2.0


def test_compare_titles_keep_two_machines_of_one_model_apart():
    import corelat.plot as cplot

    a, b = _measured_like(name="node1"), _measured_like(name="node2", seed=1)
    titles = [ax.get_title() for ax in cplot.compare([a, b]).axes if ax.images]
    assert titles[0].startswith("node1 (AMD EPYC 7B13)") and titles[1].startswith("node2 (AMD EPYC 7B13)")
    assert corelat.compare(a, b).names == ("node1", "node2")
