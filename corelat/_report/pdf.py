"""A report as a paginated PDF, drawn by matplotlib (no browser): the HTML page's sections in order,
text and tables set in lines on A4 or Letter pages, each figure on a page of its own as vectors
(a heatmap's cells are one embedded image either way), under its section's heading.

Pagination is kept here rather than left to an HTML-to-PDF library: WeasyPrint, the well-kept one,
needs Pango from the system (not installed by pip), so ``pip install 'corelat[report]'`` alone would
not make a PDF on a machine with only Python. The rules the pages keep: a heading never ends a
page, nothing is set outside the margins or over the footer, a table's row stays on one line where
it fits at 6.5 pt, a figure keeps its proportions.
"""

from __future__ import annotations

import itertools
import textwrap
import warnings

from corelat._report.figures import fit_colorbar_label
from corelat._report.model import Data, Figure, Table, Text
from corelat._version import __version__

#: Page sizes in inches.
PAPERS = {"a4": (8.27, 11.69), "letter": (8.5, 11.0)}
_LINE_PT = 9.6  # 8 pt monospace with its leading
_MARGIN_IN = 0.6
_WRAP = 100  # characters of 8 pt monospace across an A4 page within its margins
_WRAP_TEXT = 92  # of 8 pt sans-serif (wider letters than the monospace's average)
_MIN_PT = 6.5  # a wide table or column block shrinks to this size before its lines are wrapped
_KEEP_LINES = 3  # a heading stays on the page of at least this many lines of its section
#: A table longer than this is cut in the PDF (the HTML page and the CSV hold all rows).
MAX_TABLE_ROWS = 400


def _fit(lines, indent="    "):
    """Monospace lines as set: (text, size) at 8 pt, or smaller (down to _MIN_PT) where the widest
    line needs it, and only then wrapped; a column never runs past the right margin."""
    widest = max((len(x) for x in lines), default=0)
    size = 8.0 if widest <= _WRAP else max(_MIN_PT, 8.0 * _WRAP / widest)
    chars = int(_WRAP * 8.0 / size)
    return [(w, size) for line in lines
            for w in (textwrap.wrap(line, chars, subsequent_indent=indent) or [""])]


def _table_lines(header, rows):
    """A table as monospace lines: columns padded to their widest cell; where they do not fit at
    _MIN_PT, the widest columns wrap their cells inside the column (a row's cells stay side by side)."""
    lines = ([list(map(str, header))] if header else []) + [[str(c) for c in r] for r in rows]
    if not lines:
        return []
    ncol = max(len(r) for r in lines)
    lines = [r + [""] * (ncol - len(r)) for r in lines]
    widths = [max(len(r[i]) for r in lines) for i in range(ncol)]
    room = int(_WRAP * 8.0 / _MIN_PT) - 2 * (ncol - 1)
    while sum(widths) > room and max(widths) > 8:
        widths[widths.index(max(widths))] -= 1
    out = []
    for r in lines:
        cells = [textwrap.wrap(c, w) or [""] for c, w in zip(r, widths)]
        for parts in itertools.zip_longest(*cells, fillvalue=""):
            out.append("  ".join(x.ljust(w) for x, w in zip(parts, widths)).rstrip())
    return out


def _lines(block):
    """A text block as the lines it takes on a page: (style, text, size); style 'text', 'pre', 'head'."""
    if isinstance(block, Text):
        if block.pre:
            return [("pre", w, size) for w, size in _fit(block.text.splitlines())] + [("text", "", 8.0)]
        return [("text", w, 8.0) for w in textwrap.wrap(block.text, _WRAP_TEXT)] + [("text", "", 8.0)]
    if isinstance(block, Table):
        header = block.header if any(block.header) else None
        body = _table_lines(header, block.rows[:MAX_TABLE_ROWS])
        out = [("pre", w, size) for w, size in _fit(body, indent="")]
        if len(block.rows) > MAX_TABLE_ROWS:
            more = len(block.rows) - MAX_TABLE_ROWS
            out.append(("text", f"… {more} more rows in the HTML report and the CSV", 8.0))
        return out + [("text", "", 8.0)]
    if isinstance(block, Data):
        words = f"Data: {block.filename}, {block.what} (embedded in the HTML report)."
        return [("text", w, 8.0) for w in textwrap.wrap(words, _WRAP_TEXT)] + [("text", "", 8.0)]
    raise TypeError(f"no PDF text for {type(block).__name__}")


def _step(size):
    return _LINE_PT / 72.0 * (size / 8.0)


def _footer(fig, size, text):
    fig.text(0.5, 0.25 / size[1], text, ha="center", fontsize=7, color="#666")


class _Pages:
    """Lines set top to bottom on pages of ``size``; a new page when one is full; a figure on a page
    of its own under its section's heading, its proportions kept, clear of the footer."""

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
            _footer(self.fig, self.size, f"{self.footer} — page {self.count}")
            self.pdf.savefig(self.fig)
            self.plt.close(self.fig)
            self.fig = None

    def keep(self, height):
        """A new page unless ``height`` inches fit on this one (a heading with its first lines)."""
        if self.fig is not None and self.y - height < _MARGIN_IN:
            self.flush()

    def line(self, style, text, size=8.0):
        step = _step(size)
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
        w0, h0 = fig.get_size_inches()
        # a figure much wider than tall (machines side by side) gets the page turned: on an upright
        # page its heatmaps were small beside a colour bar as tall as the page
        size = self.size if w0 <= 1.25 * h0 else (self.size[1], self.size[0])
        fig.set_size_inches(*size)
        own = getattr(fig, "_suptitle", None)
        words = [block.caption] if block.caption else []
        if own is not None and own.get_text():  # the page's heading takes the suptitle's place
            words.insert(0, own.get_text())
            own.set_visible(False)
            own.set_in_layout(False)
        y = size[1] - _MARGIN_IN
        fig.text(_MARGIN_IN / size[0], y / size[1], title, fontsize=10.5, weight="bold", va="top")
        y -= _step(10.5) + 0.04
        chars = int(_WRAP_TEXT * (size[0] - 2 * _MARGIN_IN) / (self.size[0] - 2 * _MARGIN_IN))
        for w in textwrap.wrap(". ".join(x.rstrip(".") for x in words) + ("." if words else ""), chars):
            fig.text(_MARGIN_IN / size[0], y / size[1], w, fontsize=8, va="top")
            y -= _step(8)
        box_w, box_h = size[0] - 2 * _MARGIN_IN, y - 0.1 - _MARGIN_IN
        scale = min(box_w / w0, box_h / h0)
        w, h = w0 * scale, h0 * scale
        rect = ((size[0] - w) / 2 / size[0], (y - 0.1 - h) / size[1], w / size[0], h / size[1])
        engine = fig.get_layout_engine()
        if engine is not None and hasattr(engine, "set") and "Constrained" in type(engine).__name__:
            engine.set(rect=rect)
        else:
            fig.subplots_adjust(left=rect[0], bottom=rect[1], right=rect[0] + rect[2], top=rect[1] + rect[3])
        fit_colorbar_label(fig)  # the bar is shorter on the page than in the figure as made
        self.count += 1
        _footer(fig, size, f"{self.footer} — page {self.count}")
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
            blocks = list(section.blocks)
            if blocks and isinstance(blocks[0], Figure):  # its heading goes on the figure's page
                pages.figure(blocks.pop(0), section.title)
            else:
                first = _lines(blocks[0])[:_KEEP_LINES] if blocks else []
                pages.keep(_step(10.5) + sum(_step(size) for _, _, size in first))
                pages.line("head", section.title, 10.5)
            for block in blocks:
                if isinstance(block, Figure):
                    pages.figure(block, section.title)
                    continue
                for style, text, size in _lines(block):
                    pages.line(style, text, size)
        pages.flush()
