"""Layout invariants of rendered figures (issue 34, item 10): the tick labels of a distribution come in
one font size (a log axis' minor labels too) and do not run into each other; the titles of
distributions side by side (notebooks/compare_machines.ipynb's histograms) do not overlap. Pure:
drawn with Agg from made-up samples."""

import json

import numpy as np
import pytest
from conftest import REPO

from corelat import LatencyResult, example_files, load, plot

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 (the backend is chosen first, so no window opens)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def preempted(name="node", model="AMD EPYC 7B13 64-Core Processor", seed=2):
    """Samples with 1 in 50 forty times the bulk: the distributions draw on a log scale."""
    rng = np.random.default_rng(seed)
    s = 30 * (1 + 0.05 * rng.standard_normal((4, 4, 300)))
    s[..., ::50] *= 40
    s[np.arange(4), np.arange(4)] = np.nan
    return LatencyResult(cpus=range(4), kernel="cas", samples=s, name=name, metadata={"cpu_model": model})


def tick_labels(ax):
    """The drawn tick labels (major and minor, both axes) of ``ax``: (axis, text, font size, bbox)."""
    ax.figure.canvas.draw()
    out = []
    for axis in (ax.xaxis, ax.yaxis):
        for t in axis.get_ticklabels(which="both"):
            if t.get_visible() and t.get_text():
                out.append((axis.axis_name, t.get_text(), t.get_fontsize(), t.get_window_extent()))
    return out


def overlapping(boxes):
    return [(a, b) for k, (a, ba) in enumerate(boxes) for b, bb in boxes[k + 1:] if ba.overlaps(bb)]


@pytest.mark.parametrize("kind", ["violin", "hist"])
@pytest.mark.parametrize("clip", [None, (1.0, 99.0)], ids=["every-sample", "clipped"])
def test_a_distributions_tick_labels_share_one_size_and_do_not_overlap(kind, clip):
    ax = plot.distribution(preempted(), kind=kind, clip=clip)
    labels = tick_labels(ax)
    log_axis = ax.xaxis if kind == "hist" else ax.yaxis
    assert kind == "violin" or log_axis.get_scale() == "log"  # the case at hand: a log axis
    assert len([t for t in labels if t[0] == log_axis.axis_name]) >= 3
    sizes = {(axis, text): size for axis, text, size, _ in labels}
    assert len(set(sizes.values())) == 1, sizes
    for name in ("x", "y"):
        boxes = [(text, box) for axis, text, _, box in labels if axis == name]
        assert not overlapping(boxes), (name, overlapping(boxes))


def notebook_histograms(results):
    """The histograms cell of notebooks/compare_machines.ipynb, run on ``results``; its figure."""
    nb = json.loads((REPO / "notebooks" / "compare_machines.ipynb").read_text(encoding="utf-8"))
    code = next("".join(c["source"]) for c in nb["cells"]
                if c["cell_type"] == "code" and 'kind="hist"' in "".join(c["source"]))
    shown = []
    namespace = {"results": results, "plot": plot, "plt": plt}
    real_show, plt.show = plt.show, lambda *a, **k: shown.append(plt.gcf())
    try:
        exec(compile(code, "compare_machines.ipynb", "exec"), namespace)
    finally:
        plt.show = real_show
    assert len(shown) == 1
    return shown[0]


@pytest.mark.parametrize("which", ["examples", "long-names", "three"])
def test_titles_of_side_by_side_distributions_do_not_overlap(which):
    if which == "examples":
        results = [load(f) for f in example_files()]
    elif which == "long-names":
        results = [preempted("rack 3 node 7", seed=1), preempted("rack 3 node 8", seed=2)]
    else:
        results = [preempted(f"node{k}", model="Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz", seed=k)
                   for k in range(3)]
    fig = notebook_histograms(results)
    fig.canvas.draw()
    axes = [ax for ax in fig.axes if ax.get_title()]
    assert len(axes) == len(results)
    boxes = [(ax.get_title(), ax.title.get_window_extent()) for ax in axes]
    assert not overlapping(boxes), overlapping(boxes)
    page = fig.bbox
    for title, box in boxes:  # and inside the figure, not cut off at its edges
        assert page.x0 <= box.x0 and box.x1 <= page.x1 and box.y1 <= page.y1, (title, box, page)
    for ax, r in zip(axes, results):  # every title still says whose samples, and how many
        title = ax.get_title().replace("\n", " ")
        assert title.startswith(r.name) and "samples per pair" in title, title
