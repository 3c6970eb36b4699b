"""The PDF report as it is printed (issue 34 item 6): layout invariants read off the rendered pages
with poppler's ``pdftotext -bbox`` (every word's box on every page).

Pure tier (matplotlib draws; no kernel runs). Poppler is in CI's 00-system step; elsewhere the
page tests skip, saying so.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess

import numpy as np
import pytest
from conftest import PEER_FOLDER

import corelat
from corelat import LatencyResult
from corelat._report import write_report

pytest.importorskip("matplotlib")

PEERS = str(PEER_FOLDER)  # ../shared's, or the gallery's where a plain clone has none
needs_poppler = pytest.mark.skipif(shutil.which("pdftotext") is None,
                                   reason="no pdftotext here (Debian: apt-get install poppler-utils; "
                                          "CI's 00-system step installs it)")
FOOTER = re.compile(r"^corelat .* page \d+$|^—$")  # pdftotext sets the dash apart
POINT = 72.0


def pages(pdf):
    """Per page: (width, height, lines); a line is (text, x0, y0, x1, y1) in points from the top left,
    words joined where pdftotext puts them on one baseline."""
    out = subprocess.run(["pdftotext", "-bbox", str(pdf), "-"], capture_output=True, text=True, check=True,
                         timeout=120).stdout
    result = []
    for page in re.findall(r'<page width="([\d.]+)" height="([\d.]+)">(.*?)</page>', out, re.S):
        words = [(html.unescape(t), *map(float, box)) for *box, t in re.findall(
            r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">(.*?)</word>', page[2])]
        lines = {}
        for t, x0, y0, x1, y1 in words:
            key = round(y1, 0)
            lines.setdefault(key, []).append((x0, t, y0, x1, y1))
        joined = []
        for _, ws in sorted(lines.items()):
            ws.sort()
            joined.append((" ".join(w[1] for w in ws), ws[0][0], min(w[2] for w in ws), max(w[3] for w in ws),
                           max(w[4] for w in ws)))
        result.append((float(page[0]), float(page[1]), joined))
    return result


def layout_faults(pdf, headings):
    """What breaks the page rules: a heading as a page's last line, a word outside the page's margins
    (a table or line run off), a word on the footer's lines."""
    faults = []
    for k, (width, _, lines) in enumerate(pages(pdf), 1):
        footer = [ln for ln in lines if FOOTER.search(ln[0])]
        body = [ln for ln in lines if not FOOTER.search(ln[0])]
        if not footer:
            faults.append(f"page {k}: no footer")
            continue
        top = min(ln[2] for ln in footer)
        for text, x0, y0, x1, y1 in body:
            if x0 < 0.25 * POINT or x1 > width - 0.25 * POINT or y0 < 0.2 * POINT:
                faults.append(f"page {k}: {text!r} outside the margins ({x0:.0f}-{x1:.0f} of {width:.0f})")
            if y1 > top + 1:
                faults.append(f"page {k}: {text!r} over the footer")
        if body and body[-1][0] in headings:
            faults.append(f"page {k}: the heading {body[-1][0]!r} ends the page")
    return faults


def _headings(result):
    from corelat._report import build

    return {s.title for s in build(result).sections}


@needs_poppler
def test_pdf_of_a_measured_result_keeps_the_page_rules(tmp_path):
    path = corelat.example_files()[0]
    pdf = tmp_path / "r.pdf"
    write_report(path, pdf)
    assert layout_faults(pdf, _headings(path)) == []


def _distinct(n, seed, statistic="mean"):
    rng = np.random.default_rng(seed)
    m = rng.uniform(20, 140, (n, n))
    md = {"cpu_model": f"Synthetic CPU with a long model name number {seed} @ 2.80GHz",
          "statistic": statistic, "source": "core-to-core-latency csv"}
    return LatencyResult.from_matrix((m + m.T) / 2, list(range(n)), name=f"syn{seed}", metadata=md)


@needs_poppler
def test_pdf_of_three_machines_keeps_the_page_rules_and_each_table_row_on_a_line(tmp_path):
    results = [_distinct(64, 1), _distinct(8, 2), _distinct(32, 3, "median")]
    pdf = tmp_path / "cmp.pdf"
    write_report(results, pdf)
    assert layout_faults(pdf, _headings(results)) == []
    lines = [ln[0] for _, _, page in pages(pdf) for ln in page]
    assert "CPUs measured 64 8 32" in lines  # the Machines table: a row's cells side by side


@pytest.mark.skipif(not os.path.isdir(PEERS), reason="peer files not found")
@needs_poppler
def test_pdf_of_a_peer_file_keeps_the_page_rules(tmp_path):
    path = os.path.join(PEERS, "Dual Intel(R) Xeon Gold 6242 @ 2.8GHz.csv")
    pdf = tmp_path / "peer.pdf"
    write_report(path, pdf)
    assert layout_faults(pdf, _headings(path)) == []


def test_a_figure_keeps_its_proportions_on_the_page(tmp_path):
    """Three heatmaps side by side: drawn on a turned page, the colour bar no taller than they are
    (stretched to an upright page it was as tall as the page beside small heatmaps)."""
    import matplotlib.pyplot as plt

    from corelat._report import build, figures, pdf

    rep = build([_distinct(16, 1), _distinct(8, 2), _distinct(16, 3)])
    with open(tmp_path / "c.pdf", "wb") as f:
        pdf.render(rep, f, plt, figures.backend_pdf(), "today")
    (fig,) = [b.fig for s in rep.sections for b in s.blocks if isinstance(b, figures.Figure)]
    w, h = fig.get_size_inches()
    assert w > h  # landscape
    heat = [ax for ax in fig.axes if ax.images and ax.get_xlabel()]
    bar = heat[0].images[0].colorbar.ax
    tallest = max(ax.get_position().height for ax in heat)
    assert bar.get_position().height <= 1.25 * tallest  # the bar spans the titles too
    figures.close([figures.Figure(fig)])
