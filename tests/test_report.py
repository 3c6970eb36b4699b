"""The report to share (issue 21): one offline HTML page or a PDF for every kind of result.

Pure tier: no kernel runs (results are read from files or made from arrays); matplotlib draws.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import urllib.parse

import numpy as np
import pytest
from conftest import PEER_FOLDER

import corelat
from corelat import InputError, LatencyResult, LockResult, PlacementResult, SMTResult
from corelat._fleet import synth
from corelat._measure.locks import summarise
from corelat._report import write_report
from corelat.cli import main

pytest.importorskip("matplotlib")

PEERS = str(PEER_FOLDER)  # ../shared's, or the gallery's where a plain clone has none
XEON = os.path.join(PEERS, "Dual Intel(R) Xeon Gold 6242 @ 2.8GHz.csv")
I12900K = os.path.join(PEERS, "Intel Core i9-12900K.csv")
needs_peers = pytest.mark.skipif(not os.path.exists(XEON), reason="peer files not found")


def _sections(page):
    return re.findall(r'<section id="([a-z-]+)">', page)


def _hover(page):
    blobs = re.findall(r'<script type="application/json" id="values\d+">(.*?)</script>', page, re.S)
    return [json.loads(b.replace("<\\/", "</")) for b in blobs]


def _csv(page):
    href = re.search(r'href="data:text/csv;charset=utf-8,([^"]*)"', page).group(1)
    return urllib.parse.unquote(href.replace("&amp;", "&"))


def _offline(page):
    """Nothing the page could fetch: no URL with a scheme but data:, no protocol-relative source."""
    assert not re.search(r"https?:", page), "a web address in the page"
    assert not re.search(r'(src|href)="(?!data:|#)', page), "a link to something outside the page"


def test_latency_report_of_a_measured_file(tmp_path):
    r = corelat.load(corelat.example_files()[0])
    out = tmp_path / "vm.html"
    corelat.report(r, out)
    page = out.read_text(encoding="utf-8")
    assert _sections(page) == ["summary", "heatmap", "distribution", "structure", "topology", "warnings",
                               "method", "machine", "data"]
    assert "AMD EPYC" in page.split("</h1>")[0]  # the CPU model names the report, not the host "vm"
    assert "2 CPUs: 107 ns between CPUs" in page  # the structure's reading is the headline
    assert "tsc, one tick" in page and "round trips" in page  # how it was measured
    (hover,) = _hover(page)
    assert hover["cpus"] == [0, 1] and len(hover["values"]) == 4 and hover["values"][0] is None
    assert hover["values"][1] == pytest.approx(float(r.median[0, 1]), abs=0.06)
    rows = _csv(page).splitlines()
    assert rows[0] == "cpu_a,cpu_b,median_ns,min_ns,ci_low_ns,ci_high_ns" and len(rows) == 2
    assert rows[1].startswith("1,0,106.")
    _offline(page)


@needs_peers
def test_latency_report_of_64_cpus_is_small_and_hovers_every_cell(tmp_path):
    out = tmp_path / "xeon.html"
    write_report(XEON, out)
    page = out.read_text(encoding="utf-8")
    assert out.stat().st_size < 1.5e6
    (hover,) = _hover(page)
    n = len(hover["cpus"])
    assert n == 64 and len(hover["values"]) == n * n and sorted(hover["cpus"]) == list(range(64))
    left, top, width, height = hover["box"]
    assert 0 <= left < left + width <= 1 and 0 <= top < top + height <= 1
    assert "no samples, so no distribution" in page
    assert len(_csv(page).splitlines()) == 1 + 64 * 63 // 2
    _offline(page)


def _value_only(n=6, seed=0):
    rng = np.random.default_rng(seed)
    m = rng.uniform(20, 90, (n, n))
    return LatencyResult.from_matrix((m + m.T) / 2, list(range(n)), name=f"syn{seed}",
                                     metadata={"cpu_model": f"Synthetic CPU {seed}"})


@needs_peers
def test_comparison_report_one_scale_table_and_ratios(tmp_path):
    out = tmp_path / "cmp.html"
    write_report([XEON, I12900K], out)
    page = out.read_text(encoding="utf-8")
    assert _sections(page) == ["summary", "heatmap", "classes", "warnings", "machine", "data"]
    assert "(×0." in page and "within groups (ns)" in page
    _offline(page)


def _synthetic_placement():
    def one(home, across):
        n = 4
        s = np.full((n, n, 3), np.nan)
        for i in range(n):
            for j in range(n):
                if i != j:
                    s[i, j] = (20.0 if i // 2 == j // 2 else across) + np.array([-0.5, 0.0, 0.5])
        md = {"symmetric": True, "home": {"requested": f"node:{home}", "method": "synthetic"},
              "cpu_model": "Synthetic 2-node CPU"}
        return LatencyResult(cpus=range(n), kernel="cas", samples=s, metadata=md, name="syn",
                             extras={"home_node": np.full((n, n), home)})

    return PlacementResult(homes=["node:0", "node:1"], results=[one(0, 110.0), one(1, 170.0)])


def test_placement_report_one_figure_and_every_home_in_the_csv(tmp_path):
    out = tmp_path / "p.html"
    corelat.report(_synthetic_placement(), out)
    page = out.read_text(encoding="utf-8")
    assert "home node:0:" in page and "home node:1:" in page
    rows = _csv(page).splitlines()
    assert rows[0].startswith("home,") and len(rows) == 1 + 2 * 6
    _offline(page)


def _fleet(count=40):
    base = _value_only(8, seed=3)
    nodes = synth.copies(base, count, seed=1, slow=(5, synth.class_spread(base).__iter__().__next__(), 1.6),
                         metadata=lambda i: {"governor": "powersave" if i == 5 else "performance"})
    return corelat.fleet(nodes, expect=[f"node{i:03d}" for i in range(count + 1)], name="synthetic")


def test_fleet_report_verdict_first_and_every_node_filterable(tmp_path):
    f = _fleet()
    out = tmp_path / "fleet.html"
    corelat.report(f, out)
    page = out.read_text(encoding="utf-8")
    sections = _sections(page)
    assert sections[0] == "verdict" and "nodes" in sections
    verdict = page.split('<section id="verdict">')[1].split("</section>")[0]
    assert "outlier: node005" in verdict and "missing: node040" in verdict
    assert "governor: &#x27;powersave&#x27; (group: &#x27;performance&#x27;)" in page
    table = page.split('<section id="nodes">')[1].split("</section>")[0]
    assert 'class="filter"' in table and table.count("<tr>") == 1 + 41
    _offline(page)


def _smt():
    k = 2
    return SMTResult(cpus=(0, 1, 2, 3), kernel="cas", pairs=np.array([[0, 1], [2, 3]]),
                     partners=np.array([2, 0]), partner_levels=("l3", "l3"),
                     sibling_samples=np.full((k, 5), 8.0), nonsibling_samples=np.full((k, 5), 30.0),
                     loops=("int",), alone=np.full((k, 2, 1), 1e9), together=np.full((k, 2, 1), 6e8),
                     metadata={"cpu_model": "Synthetic SMT CPU"}, name="syn")


def _locks():
    raw = {"calls": [[100_000_000, 100_000_000], [20_000_000, 20_000_000]],
           "ticks": [[2_000_000_000] * 2, [2_000_000_000] * 2],
           "sermin": [[60, 60], [90, 90]], "sercalls": [[5, 5], [7, 7]], "counter": [0, 40_000_014]}
    data, threads = summarise(["baseline", "lock-pthread-mutex"], [0, 1], raw, 2.0, 50.0)
    return LockResult(cpus=[0, 1], shared=True, duration=1.0, data=data, threads=threads,
                      metadata={"timer": {"name": "tsc", "ticks_per_ns": 2.0}, "cpu_model": "Synthetic CPU"})


def test_smt_and_locks_reports(tmp_path):
    out = tmp_path / "smt.html"
    corelat.report(_smt(), out)
    page = out.read_text(encoding="utf-8")
    assert "siblings 8.0 ns" in page and _sections(page)[0] == "summary"
    _offline(page)
    out = tmp_path / "locks.html"
    corelat.report(_locks(), out)
    page = out.read_text(encoding="utf-8")
    assert "lock-pthread-mutex" in page and page.count("data:image/png") == 1  # the table and its bars
    _offline(page)
    corelat.report(_locks(), tmp_path / "locks.pdf")
    assert (tmp_path / "locks.pdf").read_bytes().startswith(b"%PDF")


def test_pdf_has_pages_and_the_sections(tmp_path):
    out = tmp_path / "vm.pdf"
    corelat.report(corelat.load(corelat.example_files()[0]), out)
    data = out.read_bytes()
    assert data.startswith(b"%PDF") and data.count(b"/Type /Page\n") + data.count(b"/Type /Page ") >= 2


def test_a_library_deprecation_while_the_pdf_is_written_fails_nothing(tmp_path, monkeypatch):
    # What matplotlib 3.9 does with Pillow >= 11.3 (CI's oldest stack): a DeprecationWarning from
    # inside the PDF backend as the file is finished. With warnings as errors it failed the report.
    import warnings

    from matplotlib.backends import backend_pdf

    class Deprecating(backend_pdf.PdfPages):
        def close(self):
            warnings.warn_explicit("'mode' parameter is deprecated", DeprecationWarning, "backend_pdf.py", 1,
                                   module="matplotlib.backends.backend_pdf")
            super().close()

    monkeypatch.setattr(backend_pdf, "PdfPages", Deprecating)
    out = tmp_path / "vm.pdf"
    corelat.report(corelat.load(corelat.example_files()[0]), out)
    assert out.read_bytes().startswith(b"%PDF")


def test_suffix_statistic_and_a_failed_write_keep_the_old_file(tmp_path):
    r = _value_only()
    with pytest.raises(InputError, match="html or .pdf"):
        write_report(r, tmp_path / "r.png")
    old = tmp_path / "r.html"
    old.write_text("old")
    with pytest.raises(InputError, match="'std' is not in the file"):
        write_report(r, old, statistic="std")
    assert old.read_text() == "old"


def test_cli_report_html_pdf_and_refusals(tmp_path, capsys):
    f = corelat.example_files()[0]
    html, pdf = tmp_path / "r.html", tmp_path / "r.pdf"
    assert main(["report", f, "--html", str(html), "--pdf", str(pdf)]) == 0
    assert html.stat().st_size > 1000 and pdf.read_bytes().startswith(b"%PDF")
    assert main(["report", *corelat.example_files()]) == 2
    assert "give --html OUT or --pdf OUT" in capsys.readouterr().err
    assert main(["report", *corelat.example_files(), "--html", str(tmp_path / "c.html")]) == 0
    assert 'id="classes"' in (tmp_path / "c.html").read_text(encoding="utf-8")
    assert main(["report", f, "--html", str(tmp_path / "r.txt")]) == 2


def test_cli_statistic_not_in_the_file_exits_2(tmp_path, capsys):
    f = tmp_path / "m.csv"
    _value_only().to_csv(f)
    for argv in (["plot", str(f), "--statistic", "std", "-o", str(tmp_path / "x.png")],
                 ["report", str(f), "--statistic", "std"],
                 ["report", str(f), "--statistic", "std", "--html", str(tmp_path / "x.html")]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert "'std' is not in the file" in err and err.count("\n") == 1
    assert not (tmp_path / "x.png").exists() and not (tmp_path / "x.html").exists()


def test_cli_missing_extra_is_one_line_with_the_install_command(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    assert main(["report", corelat.example_files()[0], "--html", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install" in err and "[report]" in err


def test_import_corelat_stays_light_and_report_is_lazy():
    code = ("import sys, corelat; assert 'corelat._report' not in sys.modules; "
            "assert 'matplotlib' not in sys.modules; f = corelat.report; "
            "assert 'matplotlib' not in sys.modules; print(f.__module__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "corelat._report"


def test_hover_box_points_at_the_cells_the_png_draws(tmp_path):
    """The script maps the pointer through ``box`` to a cell: the PNG's pixel at each cell's centre
    must have the colour of the value the array gives for that cell."""
    import base64
    import io

    import matplotlib
    import matplotlib.image

    n = 40  # cells too small for written values: the centre pixel is the cell's colour
    m = np.add.outer(np.arange(n), 3 * np.arange(n)).astype(float) + 10.0  # every cell its own value
    np.fill_diagonal(m, np.nan)
    r = LatencyResult.from_matrix(m, list(range(n)), name="distinct", symmetric=False)
    out = tmp_path / "h.html"
    write_report(r, out)
    page = out.read_text(encoding="utf-8")
    (hover,) = _hover(page)
    src = re.search(r'<figure data-hover="values\d+"><img alt="[^"]*" src="data:image/png;base64,([^"]+)"',
                    page).group(1)
    img = matplotlib.image.imread(io.BytesIO(base64.b64decode(src)), format="png")[..., :3]
    h, w = img.shape[:2]
    left, top, bw, bh = hover["box"]
    values = [v for v in hover["values"] if v is not None]
    lo, hi = min(values), max(values)
    cmap = matplotlib.colormaps["viridis"]
    for i in range(n):
        for j in range(n):
            v = hover["values"][i * n + j]
            y, x = int((top + (i + 0.5) * bh / n) * h), int((left + (j + 0.5) * bw / n) * w)
            want = (0xD9 / 255,) * 3 if v is None else cmap((v - lo) / (hi - lo))[:3]
            assert np.allclose(img[y, x], want, atol=0.04), (i, j, v, img[y, x], want)
            if v is not None:
                a, b = hover["cpus"][i], hover["cpus"][j]  # the drawn order; CPU k is row k of m
                assert v == pytest.approx(m[a, b], abs=0.06)


def test_cli_reports_a_fleet_folder_and_its_json(tmp_path):
    folder = tmp_path / "nodes"
    folder.mkdir()
    for i, r in enumerate(synth.copies(_value_only(6, seed=5), 12, seed=3)):
        r.save(folder / f"node{i:02d}.npz")
    assert main(["report", str(folder), "--html", str(tmp_path / "f.html")]) == 0
    page = (tmp_path / "f.html").read_text(encoding="utf-8")
    assert _sections(page)[0] == "verdict" and "12 nodes in 1 group" in page
    assert main(["fleet-report", str(folder), "-o", str(tmp_path / "fleet.json")]) == 0
    assert main(["report", str(tmp_path / "fleet.json"), "--pdf", str(tmp_path / "f.pdf")]) == 0
    assert (tmp_path / "f.pdf").read_bytes().startswith(b"%PDF")


def _mean_file(n=6, seed=0):
    """One value per pair that the file says are means (core-to-core-latency's CSV)."""
    r = _value_only(n, seed)
    return LatencyResult.from_matrix(r.median, list(range(n)), name=r.name,
                                     metadata={**r.metadata, "source": "core-to-core-latency csv",
                                               "statistic": "mean"})


def _page(result, tmp_path, name="r.html"):
    out = tmp_path / name
    write_report(result, out)
    return out.read_text(encoding="utf-8")


def test_a_file_of_means_is_never_called_medians(tmp_path):
    page = _page(_mean_file(), tmp_path)
    assert "median" not in page.split('<section id="topology">')[0].lower()  # summary, heatmap, structure
    data = page.split('<section id="data">')[1]
    assert "median" not in data.lower() and "95% CI" not in data
    assert "mean per pair, as the file records it" in page
    assert _csv(page).splitlines()[0] == "cpu_a,cpu_b,mean_ns"
    unknown = LatencyResult.from_matrix(_value_only().median, list(range(6)), name="x")
    page = _page(unknown, tmp_path, "u.html")
    assert "median" not in page.split('<section id="topology">')[0].lower()
    assert _csv(page).splitlines()[0] == "cpu_a,cpu_b,value_ns"


@needs_peers
def test_a_peer_file_of_means_says_mean_in_html_and_pdf(tmp_path):
    page = _page(XEON, tmp_path)
    assert "median" not in page.lower().replace("class median", "")
    pdf = tmp_path / "x.pdf"
    write_report(XEON, pdf)
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True,
                          check=True, timeout=60).stdout if shutil.which("pdftotext") else None
    if text is not None:
        assert "median" not in text.lower() and "mean per pair" in text


def _measured_md(**md):
    r = corelat.load(corelat.example_files()[0])
    return LatencyResult(cpus=r.cpus, kernel=r.kernel, samples=r.samples, name=r.name,
                         metadata={**r.metadata, **md})


def test_the_command_row_names_corelat_once(tmp_path):
    page = _page(_measured_md(argv=["/home/u/corelat/.venv/bin/corelat", "-o", "result.npz"]), tmp_path)
    assert "<td>corelat -o result.npz</td>" in page
    page = _page(_measured_md(argv=["/x/corelat/__main__.py", "--cores", "0,1"]), tmp_path)
    assert "<td>python -m corelat --cores 0,1</td>" in page
    page = _page(_measured_md(argv=["bench.py", "my file"]), tmp_path)
    assert "<td>python bench.py &#x27;my file&#x27;</td>" in page
    assert "corelat -c" not in _page(_measured_md(argv=["-c"]), tmp_path)


def test_the_time_taken_is_never_shown_as_zero(tmp_path):
    page = _page(_measured_md(elapsed_s=0.012), tmp_path)
    assert "0.0 s" not in page and "0.012 s" in page
    method = _page(_mean_file(), tmp_path).split('<section id="method">')[1].split("</section>")[0]
    assert "time measuring" not in method  # an imported file records no time


def test_one_row_is_one_row(tmp_path):
    page = _page(corelat.load(corelat.example_files()[0]), tmp_path)
    assert "1 rows" not in page and ", 1 row." in page


def test_a_measured_result_is_not_missing_an_import_source(tmp_path):
    page = _page(corelat.load(corelat.example_files()[0]), tmp_path)
    assert "imported from" not in page
    assert "imported from" in _page(_mean_file(), tmp_path)  # a file of another tool says whose


def test_the_comparison_colour_bar_label_fits_when_statistics_differ():
    from corelat._report import figures

    medians = LatencyResult.from_matrix(_value_only(8, 1).median, list(range(8)), name="b",
                                        metadata={"statistic": "median", "cpu_model": "B"})
    fig = figures.comparison([_mean_file(8), medians], ["a", "b"]).fig
    fig.canvas.draw()
    label = fig.axes[0].images[0].colorbar.ax.yaxis.label
    box, page = label.get_window_extent(), fig.bbox
    assert "mean" in label.get_text() and "median" in label.get_text()
    assert page.y0 <= box.y0 and box.y1 <= page.y1 and page.x0 <= box.x0 and box.x1 <= page.x1
