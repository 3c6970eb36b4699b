"""What a report says, apart from how it is drawn: sections of paragraphs, tables, figures and data.

The HTML and PDF writers render the same :class:`Report`, so both hold the same sections. Figures
are matplotlib figures (made here, drawn by the public :mod:`corelat.plot` functions); a heatmap
figure also carries its matrix as drawn, for the values the HTML page shows on hover.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Text:
    """A paragraph (``pre``: keep line breaks and columns, as the terminal shows them)."""

    text: str
    pre: bool = False


@dataclass
class Table:
    """Rows of cells; ``filterable`` adds a filter box to the HTML page."""

    header: list[str]
    rows: list[list[str]]
    filterable: bool = False


@dataclass
class Figure:
    """A matplotlib figure; ``hover`` (for one heatmap) holds ``cpus`` (in drawn order), ``values``
    (row-major, None where empty), ``label`` and the axes' place in the figure as fractions."""

    fig: Any
    caption: str = ""
    hover: dict[str, Any] | None = None
    png: bytes | None = None  # the figure as drawn for ``hover`` (the page's PNG: no second drawing)


@dataclass
class Data:
    """A file embedded in the page as a download link (a ``data:`` URL). A big one (the CSV of a
    4,000-CPU matrix, 8 M rows) is not held as ``text`` but made as the page is written: ``chunks``
    gives its text piece by piece, and ``rows`` counts its rows."""

    filename: str
    text: str
    what: str
    chunks: Callable[[], Iterator[str]] | None = None
    rows: int | None = None


@dataclass
class Section:
    id: str
    title: str
    blocks: list[Any] = field(default_factory=list)


@dataclass
class Report:
    """A whole report: a title, the one-line headline shown first, and the sections."""

    title: str
    headline: str
    kind: str
    sections: list[Section] = field(default_factory=list)
