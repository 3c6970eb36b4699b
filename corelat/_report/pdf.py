"""A report as a paginated PDF, drawn by matplotlib (no browser): the HTML page's sections in order,
text and tables set in lines on A4 or Letter pages, each figure on a page of its own as vectors
(a heatmap's cells are one embedded image either way).
"""

from __future__ import annotations

import textwrap
import warnings

from corelat._core import text as _text
from corelat._report.model import Data, Figure, Table, Text
from corelat._version import __version__

#: Page sizes in inches.
PAPERS = {"a4": (8.27, 11.69), "letter": (8.5, 11.0)}
_LINE_PT = 9.6  # 8 pt monospace with its leading
_MARGIN_IN = 0.6
_WRAP = 100  # characters of 8 pt monospace across an A4 page within its margins
#: A table longer than this is cut in the PDF (the HTML page and the CSV hold all rows).
MAX_TABLE_ROWS = 400


def _lines(block):
    """A text block as the lines it takes on a page, with its style ('text', 'pre', 'head')."""
    if isinstance(block, Text):
        if block.pre:
            return [("pre", w) for line in block.text.splitlines()
                    for w in (textwrap.wrap(line, _WRAP, subsequent_indent="    ") or [""])]
        return [("text", w) for w in textwrap.wrap(block.text, 100)] + [("text", "")]
    if isinstance(block, Table):
        rows = block.rows[:MAX_TABLE_ROWS]
        header = block.header if any(block.header) else None
        body = _text.table(header, rows, left=tuple(range(len(block.header))))
        out = [("pre", w) for line in body.splitlines() for w in (textwrap.wrap(line, _WRAP) or [""])]
        if len(block.rows) > MAX_TABLE_ROWS:
            more = len(block.rows) - MAX_TABLE_ROWS
            out.append(("text", f"… {more} more rows in the HTML report and the CSV"))
        return out + [("text", "")]
    if isinstance(block, Data):
        return [("text", f"Data: {block.filename}, {block.what} (embedded in the HTML report)."),
                ("text", "")]
    raise TypeError(f"no PDF text for {type(block).__name__}")


class _Pages:
    """Lines set top to bottom on pages of ``size``; a new page when one is full."""

    def __init__(self, plt, pdf, size, footer):
        self.plt, self.pdf, self.size, self.footer = plt, pdf, size, footer
        self.fig, self.y, self.count = None, 0.0, 0

    def _new(self):
        self.flush()
        self.fig = self.plt.figure(figsize=self.size)
        self.y = self.size[1] - _MARGIN_IN

    def flush(self):
        if self.fig is not None:
            self.count += 1
            self.fig.text(0.5, 0.25 / self.size[1], f"{self.footer} — page {self.count}", ha="center",
                          fontsize=7, color="#666")
            self.pdf.savefig(self.fig)
            self.plt.close(self.fig)
            self.fig = None

    def line(self, style, text, size=8.0):
        step = _LINE_PT / 72.0 * (size / 8.0)
        if self.fig is None or self.y - step < _MARGIN_IN:
            self._new()
        family = "monospace" if style == "pre" else "sans-serif"
        weight = "bold" if style == "head" else "normal"
        self.fig.text(_MARGIN_IN / self.size[0], self.y / self.size[1], text, fontsize=size, family=family,
                      weight=weight, va="top")
        self.y -= step

    def figure(self, block, title):
        self.flush()
        fig = block.fig
        fig.set_size_inches(*self.size)
        words = f"{title}: {block.caption}" if block.caption else title
        fig.suptitle("\n".join(textwrap.wrap(words, 110)), fontsize=8.5)
        self.count += 1
        fig.text(0.5, 0.25 / self.size[1], f"{self.footer} — page {self.count}", ha="center", fontsize=7,
                 color="#666")
        self.pdf.savefig(fig)


def render(report, f, plt, backend_pdf, date, paper="a4"):
    """Write the report as PDF to the binary file ``f``."""
    size = PAPERS[paper]
    meta = {"Title": report.title, "Creator": f"corelat {__version__}"}
    # A library's deprecation is no concern of the report's reader, and must not fail the report
    # where warnings are errors: matplotlib 3.9 (the newest for Python 3.9) passes Pillow >= 11.3 a
    # `mode` it deprecates, when the PDF's images are written.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"(matplotlib|PIL)\b")
        _write(report, f, backend_pdf, meta, plt, size, date)


def _write(report, f, backend_pdf, meta, plt, size, date):
    with backend_pdf.PdfPages(f, metadata=meta) as pdf:
        pages = _Pages(plt, pdf, size, f"corelat {__version__}, {date}")
        pages.line("head", report.title, 13)
        for w in textwrap.wrap(report.headline, 90):
            pages.line("head", w, 10.5)
        pages.line("text", "")
        for section in report.sections:
            pages.line("head", section.title, 10.5)
            for block in section.blocks:
                if isinstance(block, Figure):
                    pages.figure(block, section.title)
                    continue
                for style, text in _lines(block):
                    pages.line(style, text)
        pages.flush()
