"""Plots render (Agg, to PNG) with the expected axes, labels, colour bar, boundaries and annotations."""

import re
import subprocess
import sys

import numpy as np
import pytest

from corelat import LatencyResult, load, plot
from corelat._core.errors import InputError
from corelat._results.latency import PairFlag
from corelat.cli import main

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 (the backend is chosen first, so no window opens)

PEERS = "fixtures/peer-results/core-to-core-latency"
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def blocks(n_groups, per_group, within=20.0, across=90.0, name="", seed=0):
    lab = np.repeat(np.arange(n_groups), per_group)
    m = np.where(lab[:, None] == lab[None, :], within, across)
    m = m * (1 + 0.03 * np.random.default_rng(seed).standard_normal(m.shape))
    return LatencyResult.from_matrix((m + m.T) / 2, name=name or f"{n_groups}x{per_group}")


def sampled(bimodal_pair=(0, 3), n=4, k=200):
    """A result with raw samples; one pair bimodal (and flagged so)."""
    rng = np.random.default_rng(1)
    s = np.full((n, n, k), np.nan)
    for i in range(n):
        for j in range(n):
            if i != j:
                s[i, j] = (20 + 10 * abs(i - j)) * (1 + 0.03 * rng.standard_normal(k))
    a, b = bimodal_pair
    for i, j in ((a, b), (b, a)):
        s[i, j, ::3] = 8 + 0.3 * rng.standard_normal(s[i, j, ::3].size)
    flags = np.where(np.eye(n, dtype=bool), 0, PairFlag.MEASURED)
    flags[a, b] |= PairFlag.BIMODAL
    flags[b, a] |= PairFlag.BIMODAL
    return LatencyResult(cpus=range(n), kernel="cas", samples=s, flags=flags, name="sampled")


def save(fig, path):
    fig.savefig(path, dpi=60)
    assert path.read_bytes()[:8] == PNG
    return path


def colorbar_label(fig):
    labels = [a.get_ylabel() for a in fig.axes[1:]]
    assert labels, "no colour bar"
    return labels[-1]


def test_heatmap_peer_file_falls_back_to_structure_order(shared_dir, tmp_path):
    r = load(shared_dir / PEERS / "AMD Ryzen 9 5950X @ 3.40 GHz.csv")
    ax = plot.heatmap(r, order="topology")  # but the file carries none
    fig = ax.figure
    assert len(fig.axes) == 2
    assert colorbar_label(fig) == "one-way latency (ns), mean per pair, as the file records it"
    assert ax.get_xlabel() == "CPU" and ax.get_ylabel() == "CPU"
    title = ax.get_title()
    assert title.startswith("AMD Ryzen 9 5950X @ 3.40 GHz: unknown kernel, 32 CPUs")
    assert "no topology recorded: ordered by latency structure" in title
    # Structure order: each CCX's CPUs together, boundary between them drawn (one h + one v line).
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks[:4] == ["0", "16", "1", "17"]
    assert sorted({round(x, 1) for ln in ax.lines for x in np.ravel(ln.get_xydata())} & {15.5}) == [15.5]
    assert len(ax.texts) == 32 * 31  # 32 CPUs fit their values
    save(fig, tmp_path / "5950x.png")


def test_heatmap_os_order_and_annotation_switch(shared_dir):
    r = load(shared_dir / PEERS / "Intel Core i9-9900K CPU @ 3.60 GHz.csv")
    ax = plot.heatmap(r, order="os", annotate=False)
    assert [t.get_text() for t in ax.get_xticklabels()] == [str(c) for c in range(16)]
    assert len(ax.texts) == 0 and len(ax.lines) == 0
    assert "CPU order" in ax.get_title()
    ax = plot.heatmap(r, order="os", statistic="median", annotate=True)
    cells = {t.get_text() for t in ax.texts}
    assert "6.0" in cells  # below 10 ns one decimal is kept


def test_heatmap_8_and_192_cpus_stay_readable(tmp_path):
    small = plot.heatmap(blocks(2, 4))
    assert len(small.texts) == 8 * 7
    assert len(small.get_xticklabels()) == 8
    save(small.figure, tmp_path / "8.png")
    big = blocks(8, 24, name="big")
    ax = plot.heatmap(big, order="structure")
    assert len(ax.texts) == 0  # 192 CPUs: no room for numbers
    assert len(ax.get_xticklabels()) <= 33  # labels thinned out
    assert len(ax.lines) == 2 * 7  # 8 groups: 7 boundaries, both directions
    assert "latency structure order" in ax.get_title()
    path = save(ax.figure, tmp_path / "192.png")
    assert path.stat().st_size > 10_000


def test_heatmap_into_given_axes_with_shared_scale():
    fig, (a, b) = plt.subplots(1, 2)
    out = plot.heatmap(blocks(2, 4), ax=a, vmin=0, vmax=200, colorbar=False, order="os")
    assert out is a
    assert a.images[0].get_clim() == (0, 200)
    assert len(fig.axes) == 2  # no colour bar added
    with pytest.raises(InputError, match="unknown order"):
        plot.heatmap(blocks(2, 4), order="random", ax=b)


@pytest.fixture(scope="session")
def opteron_topology(hwloc_topology):
    return hwloc_topology("16amd64-8n2c")


def test_heatmap_topology_order_draws_package_boundaries(opteron_topology, tmp_path):
    # 8 packages of 2 CPUs (each its own NUMA node); CPU order shuffled in the result.
    base = blocks(8, 2, name="opteron")
    perm = np.random.default_rng(2).permutation(16)
    r = LatencyResult(cpus=perm, kernel="cas", samples=base.samples[np.ix_(perm, perm)],
                      metadata={"topology": opteron_topology.to_dict()}, name="opteron")
    ax = plot.heatmap(r, order="topology")
    assert [t.get_text() for t in ax.get_xticklabels()] == [str(c) for c in range(16)]
    assert "topology order; lines: package, NUMA node" in ax.get_title()
    assert len(ax.lines) == 2 * 7
    save(ax.figure, tmp_path / "topo.png")


def test_distribution_shows_samples_and_flags(tmp_path):
    r = sampled()
    ax = plot.distribution(r)
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert len(labels) == 6  # every pair of 4 CPUs fits under the default limit
    assert "3↔0 bimodal" in labels
    assert ax.get_ylabel() == "one-way latency (ns)"
    assert ax.collections  # violin bodies and sample dots
    save(ax.figure, tmp_path / "violin.png")
    ax = plot.distribution(r, pairs=[(0, 3), (1, 2)], kind="hist")
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["0↔3 bimodal", "1↔2"]
    assert ax.get_xlabel() == "one-way latency (ns)"
    save(ax.figure, tmp_path / "hist.png")


def test_distribution_log_scale_for_preempted_samples():
    r = sampled()
    s = np.array(r.samples)
    s[1, 0, :5] = 5000.0  # a few samples 200x the rest, as when a vCPU is descheduled
    r = LatencyResult(cpus=r.cpus, kernel=r.kernel, samples=s, flags=r.flags, name="preempted")
    ax = plot.distribution(r)
    assert ax.get_ylabel() == "one-way latency (ns, log scale)"
    assert "5000" in [t.get_text() for t in ax.get_yticklabels()]
    ax = plot.distribution(r, kind="hist")
    assert ax.get_xscale() == "log"


def test_distribution_refuses_value_only_and_bad_pairs(shared_dir):
    r = load(shared_dir / PEERS / "Intel Core i9-9900K CPU @ 3.60 GHz.csv")
    with pytest.raises(InputError, match="one value per pair .*no distribution to draw"):
        plot.distribution(r)
    with pytest.raises(InputError, match="not two CPUs of this result"):
        plot.distribution(sampled(), pairs=[(0, 9)])
    with pytest.raises(InputError, match="unknown kind"):
        plot.distribution(sampled(), kind="pie")


def test_compare_side_by_side_on_one_scale(tmp_path):
    a, b = blocks(2, 4, 20, 90, name="a"), blocks(2, 8, 40, 150, name="b")
    fig = plot.compare([a, b])
    heat = [ax for ax in fig.axes if ax.images]
    assert [ax.get_title().splitlines()[0] for ax in heat] == ["a", "b"]
    clims = {ax.images[0].get_clim() for ax in heat}
    assert len(clims) == 1  # one colour scale
    lo, hi = clims.pop()
    assert lo < 21 and hi > 140
    assert len(fig.axes) == 3 and colorbar_label(fig).startswith("one-way latency (ns)")
    save(fig, tmp_path / "compare.png")


def test_missing_matplotlib_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"-m pip install .*\[plot\]"):
        plot.heatmap(blocks(2, 2))


def test_cli_plot_without_matplotlib_exits_2_with_the_install_command(monkeypatch, capsys, tmp_path):
    sampled().save(tmp_path / "s.npz")
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert main(["plot", str(tmp_path / "s.npz"), "-o", str(tmp_path / "s.png")]) == 2
    err = capsys.readouterr().err
    assert "needs matplotlib; install it with:" in err
    assert re.search(r"-m pip install '[^']*\[plot\]'", err)


@pytest.mark.parametrize("direct_url, checkout, cwd, target", [
    (None, None, "/home/u", "'corelat[plot]'"),  # from an index
    ('{"url": "https://files.example/corelat-1.0.tar.gz", "archive_info": {}}', None, "/home/u",
     "'corelat[plot]'"),
    ('{"url": "file:///src/corelat", "dir_info": {}}', None, "/src/corelat", "'.[plot]'"),
    ('{"url": "file:///src/corelat", "dir_info": {"editable": true}}', None, "/home/u",
     "'/src/corelat[plot]'"),
    (None, "/src/corelat", "/src/corelat", "'.[plot]'"),  # imported from the checkout itself
    ("not json", None, "/home/u", "'corelat[plot]'"),
])
def test_install_command_works_from_where_the_user_is(direct_url, checkout, cwd, target):
    from corelat._core.extras import install_command

    cmd = install_command("plot", read_direct_url=lambda: direct_url, checkout=lambda: checkout, cwd=cwd,
                          python=cwd + "/.venv/bin/python")
    assert cmd == f".venv/bin/python -m pip install {target}"
    assert install_command("plot", read_direct_url=lambda: None, checkout=lambda: None, cwd="/x",
                           python="/usr/bin/python3") == "/usr/bin/python3 -m pip install 'corelat[plot]'"


def test_imports_stay_light():
    code = ("import sys, corelat, corelat.plot, corelat._analysis.structure, corelat._analysis.compare; "
            "heavy = [m for m in ('matplotlib', 'scipy') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.slow
def test_cli_plot_and_report(tmp_path, capsys, shared_dir):
    src = str(shared_dir / PEERS / "Intel Core i9-9900K CPU @ 3.60 GHz.csv")
    out = tmp_path / "p.png"
    assert main(["plot", src, "-o", str(out), "--order", "os"]) == 0
    assert out.read_bytes()[:8] == PNG
    two = tmp_path / "two.png"
    assert main(["plot", src, src, "-o", str(two)]) == 0
    assert two.read_bytes()[:8] == PNG
    sampled().save(tmp_path / "s.npz")
    assert main(["plot", str(tmp_path / "s.npz"), "--kind", "violin", "--pairs", "0,3", "1,2",
                 "-o", str(tmp_path / "v.png")]) == 0
    capsys.readouterr()
    assert main(["plot", src, "--kind", "violin", "-o", str(tmp_path / "x.png")]) == 2
    assert "one value per pair" in capsys.readouterr().err
    assert main(["plot", src, "-o", str(tmp_path / "x.gif")]) == 2
    assert main(["report", src]) == 0
    text = capsys.readouterr().out
    assert "Structure: no grouping: 16 CPUs (8 cores × 2 threads)" in text
    assert "Min  latency:" in text
    assert main(["report", str(tmp_path / "s.npz"), "--json"]) == 0
    assert '"smt_pairs"' in capsys.readouterr().out
    bad = tmp_path / "bad.txt"
    bad.write_text("CPU 0 1\n0 0 x\n1 5 0\n")
    assert main(["report", str(bad)]) == 2
    assert "'x' is not a number" in capsys.readouterr().err


# -- figures a new user sees (issue 10) ----------------------------------------------------------


def drawn_texts(fig):
    """(text, window bbox) of every non-empty Text artist that drawing the figure draws."""
    import matplotlib.text as mtext

    seen = []
    orig = mtext.Text.draw

    def draw(self, renderer):
        orig(self, renderer)
        if self.get_visible() and self.get_text().strip():
            seen.append((self, self.get_window_extent(renderer)))

    mtext.Text.draw = draw
    try:
        fig.canvas.draw()  # the first draw, as savefig or a notebook does
    finally:
        mtext.Text.draw = orig
    return seen


def text_problems(fig):
    """Texts cut off by the figure's edge, and pairs of texts that overlap (by more than a pixel)."""
    boxes = drawn_texts(fig)
    edge = fig.bbox
    out = [f"cut off: {t.get_text()!r}" for t, b in boxes
           if b.x0 < edge.x0 - 1 or b.y0 < edge.y0 - 1 or b.x1 > edge.x1 + 1 or b.y1 > edge.y1 + 1]
    for k, (t, b) in enumerate(boxes):
        for u, c in boxes[k + 1:]:
            if min(b.x1, c.x1) - max(b.x0, c.x0) > 1 and min(b.y1, c.y1) - max(b.y0, c.y0) > 1:
                out.append(f"overlap: {t.get_text()!r} / {u.get_text()!r}")
    return out


def oneway(bound=18.0, n=4, k=200):
    """A one-way result whose directions differ by 5 ns (84 vs 89), with a timer-offset bound."""
    rng = np.random.default_rng(3)
    s = np.full((n, n, k), np.nan)
    for i in range(n):
        for j in range(n):
            if i != j:
                s[i, j] = 84 + (5 if i < j else 0) + rng.standard_normal(k)
    return LatencyResult(cpus=range(n), kernel="oneway", samples=s, metadata={"symmetric": False},
                         name="oneway",
                         extras={"skew_bound_ns": np.where(np.eye(n, dtype=bool), np.nan, bound)})


def outlier(k=200):
    """Sampled pairs; one sample of one pair is a 60 µs preemption."""
    r = sampled(k=k)
    s = np.array(r.samples)
    s[1, 0, 3] = s[0, 1, 3] = 60000.0
    return LatencyResult(cpus=r.cpus, kernel=r.kernel, samples=s, flags=r.flags, name="outlier")


def _examples():
    from corelat import example_files

    return [load(f) for f in example_files()]


FIGURES = {
    "compare 2 examples": lambda sd: plot.compare(_examples()),
    "compare 5950X 7950X": lambda sd: plot.compare(
        [sd / PEERS / "AMD Ryzen 9 5950X @ 3.40 GHz.csv", sd / PEERS / "AMD Ryzen 9 7950X.csv"]),
    "compare 3 sizes": lambda sd: plot.compare([blocks(2, 4), blocks(4, 8), blocks(8, 8)]),
    "heatmap 2": lambda sd: plot.heatmap(_examples()[0]).figure,
    "heatmap 32": lambda sd: plot.heatmap(load(sd / PEERS / "AMD Ryzen 9 5950X @ 3.40 GHz.csv")).figure,
    "heatmap 64": lambda sd: plot.heatmap(blocks(8, 8), order="structure").figure,
    "heatmap 96": lambda sd: plot.heatmap(blocks(6, 16), order="structure").figure,
    "heatmap oneway": lambda sd: plot.heatmap(oneway(), order="os").figure,
    "violin": lambda sd: plot.distribution(outlier()).figure,
    "hist log": lambda sd: plot.distribution(outlier(), kind="hist").figure,
}


@pytest.mark.slow
@pytest.mark.parametrize("what", FIGURES)
def test_no_text_cut_off_or_overlapping(what, shared_dir, tmp_path):
    fig = FIGURES[what](shared_dir)
    assert text_problems(fig) == []
    save(fig, tmp_path / "f.png")


def test_cli_plot_two_files_has_no_text_cut_off(monkeypatch, tmp_path, shared_dir):
    problems = []
    real = plot.compare

    def compare(*a, **k):  # the figure the command saves, drawn first as savefig would
        fig = real(*a, **k)
        problems.append(text_problems(fig))
        return fig

    monkeypatch.setattr(plot, "compare", compare)
    files = [str(shared_dir / PEERS / name) for name in ("AMD Ryzen 9 5950X @ 3.40 GHz.csv",
                                                         "AMD Ryzen 9 7950X.csv")]
    assert main(["plot", *files, "-o", str(tmp_path / "two.png")]) == 0
    assert problems == [[]]


def test_two_files_of_one_host_are_labelled_by_file_name(tmp_path, capsys):
    import corelat

    cas = _examples()[0]
    paths = [tmp_path / "before.npz", tmp_path / "after.npz"]
    for p in paths:
        cas.save(p)  # the same host name in both
    fig = plot.compare(paths)
    assert [ax.get_title().splitlines()[0] for ax in fig.axes if ax.images] == ["before", "after"]
    assert corelat.compare(*paths).names == ("before", "after")
    fig = plot.compare(paths, names=["A", "B"])  # names still win
    assert [ax.get_title().splitlines()[0] for ax in fig.axes if ax.images] == ["A", "B"]
    other = blocks(2, 2, name="other")
    assert corelat.compare(paths[0], other).names == (cas.name, "other")  # no collision: the name
    assert main(["compare", *map(str, paths)]) == 0
    assert "before" in capsys.readouterr().out
    assert main(["plot", *map(str, paths), "--names", "x", "y", "-o", str(tmp_path / "p.png")]) == 0


def test_heatmap_labels_every_cpu_up_to_64_then_every_kth_and_each_group():
    r = blocks(8, 8)  # 64 CPUs, shuffled by structure order
    ax = plot.heatmap(r, order="structure")
    assert sorted(int(t.get_text()) for t in ax.get_xticklabels()) == list(range(64))
    assert sorted(int(t.get_text()) for t in ax.get_yticklabels()) == list(range(64))
    big = blocks(6, 16)  # 96 CPUs: every k-th, and the first CPU of every group
    ax = plot.heatmap(big, order="structure")
    ticks = list(ax.get_xticks())
    vertical = [ln.get_xdata() for ln in ax.lines if ln.get_xdata()[0] == ln.get_xdata()[1]]
    starts = sorted({round(x[0] + 0.5) for x in vertical})
    assert len(starts) == 5 and set(starts) <= set(ticks) and 0 in ticks
    assert 20 <= len(ticks) <= 40


def test_oneway_heatmap_names_sender_and_receiver_and_does_not_paint_noise():
    ax = plot.heatmap(oneway(bound=18.0), order="os")
    assert ax.get_ylabel() == "sending CPU" and ax.get_xlabel() == "receiving CPU"
    assert "within the values' uncertainty (±18 ns)" in ax.get_title()
    lo, hi = ax.images[0].get_clim()
    assert hi - lo >= 36  # the scale is as wide as the uncertainty, not stretched over 5 ns
    ax = plot.heatmap(oneway(bound=0.5), order="os")  # a real 5 ns difference: drawn as such
    assert "uncertainty" not in ax.get_title()
    lo, hi = ax.images[0].get_clim()
    assert hi - lo < 10
    ax = plot.heatmap(sampled(), order="os")  # round-trip kernels keep plain CPU labels
    assert ax.get_xlabel() == "CPU" and ax.get_ylabel() == "CPU"


def test_violins_clip_outliers_and_count_them():
    ax = plot.distribution(outlier(), pairs=[(1, 0), (2, 1)])
    assert ax.get_ylabel() == "one-way latency (ns)"  # one preempted sample no longer forces a log scale
    assert ax.get_ylim()[1] < 100
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(re.match(r"\d+ samples above their pair's 99th percentile, not drawn \(up to 60000 ns\)", t)
               for t in legend), legend
    ax = plot.distribution(outlier(), pairs=[(1, 0)], clip=None)  # every sample: log scale as before
    assert ax.get_ylabel() == "one-way latency (ns, log scale)"
    assert ax.get_legend() is None
    with pytest.raises(InputError, match="percentiles"):
        plot.distribution(outlier(), clip=(50, 10))


def test_log_histogram_labels_the_minor_ticks():
    ax = plot.distribution(outlier(), kind="hist")
    assert ax.get_xscale() == "log"
    ax.figure.canvas.draw()
    minor = {t.get_text() for t in ax.get_xticklabels(minor=True)} - {""}
    assert {"20", "50", "200", "500"} <= minor, minor


def test_distribution_title_counts_samples_per_pair():
    r = sampled()
    s = np.array(r.samples)
    s[1, 0, 150:] = s[0, 1, 150:] = np.nan  # fewer samples in one pair (as in precision-driven sweeps)
    r = LatencyResult(cpus=r.cpus, kernel=r.kernel, samples=s, flags=r.flags, name="r")
    assert "150-200 (median 200) samples per pair" in plot.distribution(r).get_title()
    assert "200 samples per pair" in plot.distribution(sampled()).get_title()


def test_two_cpu_heatmap_writes_its_value_instead_of_a_colour_bar():
    r = _examples()[0]
    ax = plot.heatmap(r)
    assert len(ax.figure.axes) == 1  # no colour bar
    value = plot._fmt(float(r.median[1, 0]))
    assert [t.get_text() for t in ax.texts] == [value, value]
    assert f"median {value} ns for every pair" in ax.get_title()


def test_a_measured_result_with_one_sample_per_pair_still_draws():
    """A loaded machine's time budget can leave one sample per pair: that is not 'one value per pair'
    from another tool, and the distribution (a dot per pair) is drawn, not refused."""
    r = sampled(k=1)
    for kind in ("violin", "hist"):
        ax = plot.distribution(r, kind=kind)
        assert "1 sample per pair" in ax.get_title()


def test_imported_csv_colour_bar_names_the_statistic_the_file_records(shared_dir):
    """core-to-core-latency's CSV holds a mean per pair: the colour bar must not call it a median."""
    r = load(shared_dir / PEERS / "AMD Ryzen 9 5950X @ 3.40 GHz.csv")
    assert r.metadata["statistic"] == "mean"
    for fig in (plot.heatmap(r).figure, plot.compare([r, blocks(2, 4)])):
        label = colorbar_label(fig)
        assert "mean per pair" in label and "median" not in label.split(";")[0], label
    unknown = LatencyResult.from_matrix(np.array([[np.nan, 5.0, 7.0], [5.0, np.nan, 6.0],
                                                  [7.0, 6.0, np.nan]]),
                                        metadata={"source": "somewhere"})
    label = colorbar_label(plot.heatmap(unknown).figure)
    assert "median" not in label and "does not say" in label, label
    single = LatencyResult.from_matrix(np.array([[np.nan, 5.0], [5.0, np.nan]]),
                                       metadata={"statistic": "min"})
    assert "min 5" in plot.heatmap(single).get_title() and "median" not in plot.heatmap(single).get_title()


def test_chase_kernel_colour_bar_says_it_shows_the_cost_of_one_load():
    r = sampled()
    r = LatencyResult(cpus=r.cpus, kernel="read-modified", samples=r.samples, flags=r.flags,
                      metadata={"symmetric": False}, name="chase")
    label = colorbar_label(plot.heatmap(r).figure)
    assert label.startswith("cost of one load (ns)") and "one-way latency" not in label, label


@pytest.mark.slow
def test_a_raster_image_too_big_for_memory_is_refused(tmp_path, capsys):
    # Issue 24 item 6: `plot big1000.npz --dpi 1200` (310 megapixels) was killed for memory in 6 GiB.
    rng = np.random.default_rng(0)
    m = rng.uniform(20.0, 100.0, (1000, 1000))
    path = tmp_path / "big1000.npz"
    LatencyResult.from_matrix((m + m.T) / 2, name="big").save(path)
    out = tmp_path / "big.png"
    assert main(["plot", str(path), "--dpi", "1200", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "megapixels" in err and "--dpi" in err and not out.exists(), err


def test_compare_s_colour_bar_label_fits_when_statistics_differ():
    """`corelat.plot.compare` (and `corelat plot A B`) of a file of means beside one of medians: the
    colour bar's label names both statistics and was one line longer than the bar, cut off at both
    ends ("-way latency…"); the report wrapped it, the plot itself did not (issue 34 item 5)."""
    rng = np.random.default_rng(0)
    m = rng.uniform(20, 90, (8, 8))
    m = (m + m.T) / 2
    means = LatencyResult.from_matrix(m, list(range(8)), name="a",
                                      metadata={"source": "core-to-core-latency csv", "statistic": "mean"})
    medians = LatencyResult.from_matrix(m * 1.1, list(range(8)), name="b", metadata={"statistic": "median"})
    fig = plot.compare([means, medians], names=["a", "b"])
    fig.canvas.draw()
    label = fig.axes[0].images[0].colorbar.ax.yaxis.label
    box, page = label.get_window_extent(), fig.bbox
    assert "mean" in label.get_text() and "median" in label.get_text()
    assert page.y0 <= box.y0 and box.y1 <= page.y1 and page.x0 <= box.x0 and box.x1 <= page.x1, (box, page)
