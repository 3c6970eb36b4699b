"""A report as one offline HTML page: CSS, script, figures (PNG) and data (CSV) inline.

The page makes no network request: no CDN, no web font, and a Content-Security-Policy that lets
the browser load nothing but what the page holds. A heatmap is one image plus one array of its
values; a few lines of script show a cell's value under the pointer (a per-cell SVG element would
be too heavy at hundreds of CPUs).
"""

from __future__ import annotations

import base64
import html
import io
import json
import re
from urllib.parse import quote

from corelat._report.figures import PNG_DPI
from corelat._report.model import Data, Figure, Table, Text
from corelat._version import __version__


_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'"

_CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:0;
color:#1d1d1f;background:#fff}
header,main,footer{max-width:1180px;margin:0 auto;padding:0 20px}
header{padding-top:18px;border-bottom:1px solid #ddd}
h1{font-size:1.5em;margin:.2em 0}
.headline{font-size:1.2em;font-weight:600;background:#eef4fb;border-left:4px solid #2b6cb0;padding:8px 12px}
nav a{margin-right:12px;font-size:.9em}
h2{font-size:1.2em;border-bottom:1px solid #eee;padding-bottom:3px;margin-top:1.6em}
pre{background:#f6f6f6;padding:8px 10px;overflow-x:auto;font-size:.85em;white-space:pre-wrap}
table{border-collapse:collapse;font-size:.88em;margin:.5em 0}
td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f3f3f3;position:sticky;top:0}
tr[hidden]{display:none}
.scroll{max-height:640px;overflow:auto}
figure{margin:.6em 0;position:relative;display:inline-block;max-width:100%}
figure img{max-width:100%;height:auto;display:block}
figcaption{font-size:.85em;color:#555}
.tip{position:absolute;background:#222;color:#fff;padding:2px 6px;font-size:.85em;border-radius:3px;
pointer-events:none;white-space:nowrap}
input.filter{font-size:1em;padding:3px 6px;width:22em}
footer{color:#666;font-size:.85em;border-top:1px solid #ddd;margin-top:2em;padding-top:8px;
padding-bottom:20px}
"""

# Hover: the pointer's place over the image, through the axes' box (fractions of the image), gives
# the cell; its value comes from the one array of values beside the image.
_SCRIPT = """
document.querySelectorAll('figure[data-hover]').forEach(function(f){
var d=JSON.parse(document.getElementById(f.dataset.hover).textContent),n=d.cpus.length,
img=f.querySelector('img'),tip=f.querySelector('.tip'),b=d.box,k=d.block||1,g=Math.ceil(n/k);
f.querySelector('figcaption').append(k>1?' Point at a cell for the value of its block ('+g+' × '+g+
' blocks of '+k+' × '+k+' pairs).':' Point at a cell for its value ('+n+' × '+n+' values).');
img.addEventListener('mousemove',function(e){var r=img.getBoundingClientRect(),
j=Math.floor(((e.clientX-r.left)/r.width-b[0])/b[2]*n),i=Math.floor(((e.clientY-r.top)/r.height-b[1])/b[3]*n);
if(i<0||j<0||i>=n||j>=n){tip.hidden=true;return;}var v=d.values[Math.floor(i/k)*g+Math.floor(j/k)];
tip.hidden=false;tip.textContent=(k>1?'CPUs '+d.cpus[i-i%k]+'… '+d.arrow+' CPUs '+d.cpus[j-j%k]+
'… (its block)':'CPU '+d.cpus[i]+' '+d.arrow+' CPU '+d.cpus[j])+': '+(v===null?'no value':v+' '+d.unit);
tip.style.left=(e.clientX-r.left+14)+'px';tip.style.top=(e.clientY-r.top+14)+'px';});
img.addEventListener('mouseleave',function(){tip.hidden=true;});});
document.querySelectorAll('input.filter').forEach(function(inp){
var t=document.getElementById(inp.dataset.table),c=document.getElementById(inp.dataset.table+'-count');
inp.addEventListener('input',function(){var q=inp.value.toLowerCase(),k=0;
t.querySelectorAll('tbody tr').forEach(function(tr){
tr.hidden=q!==''&&tr.textContent.toLowerCase().indexOf(q)<0;if(!tr.hidden)k++;});
c.textContent=k+' shown';});});
"""


def _e(text):
    return html.escape(str(text), quote=True)


def png(fig, dpi=PNG_DPI):
    """The figure as PNG bytes, without the PNG's software note (it names a web address)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    return buf.getvalue()


class _Ids:
    def __init__(self):
        self.k = 0

    def next(self, what):
        self.k += 1
        return f"{what}{self.k}"


def _figure(block, ids):
    src = "data:image/png;base64," + base64.b64encode(block.png or png(block.fig)).decode("ascii")
    cap = f"<figcaption>{_e(block.caption)}</figcaption>"
    if block.hover is None:
        return f'<figure><img alt="{_e(block.caption)}" src="{src}">{cap}</figure>'
    key = ids.next("values")
    data = json.dumps(block.hover, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    return (f'<figure data-hover="{key}"><img alt="{_e(block.caption)}" src="{src}">'
            f'<span class="tip" hidden></span>{cap}</figure>'
            f'<script type="application/json" id="{key}">{data}</script>')


def _table(block, ids):
    key = ids.next("table")
    head = "".join(f"<th>{_e(h)}</th>" for h in block.header)
    body = "\n".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in block.rows)
    thead = f"<thead><tr>{head}</tr></thead>" if any(block.header) else ""
    out = f'<table id="{key}">{thead}<tbody>\n{body}\n</tbody></table>'
    if not block.filterable:
        return out
    return (f'<p><input class="filter" type="search" data-table="{key}" placeholder="filter rows: node, '
            f'status, setting…" aria-label="filter the table"> <span id="{key}-count">{len(block.rows)} '
            f'rows</span></p><div class="scroll">{out}</div>')


_SAFE = ",.-_ "
#: Text that quote(safe=_SAFE) would leave as it is but for its line breaks, and _e as it is.
_PLAIN = re.compile(r"[A-Za-z0-9,.\-_ \n~]*")


def _quoted(text):
    if _PLAIN.fullmatch(text):  # a CSV's numbers: 8 M rows in seconds, not a call per character
        return text.replace("\n", "%0A")
    return _e(quote(text, safe=_SAFE))


def _data(block):
    """The download link, in pieces: a big CSV's text is quoted a chunk at a time."""
    rows = block.rows if block.chunks is not None else block.text.count("\n") - 1  # the header is no row
    yield f'<p><a download="{_e(block.filename)}" href="data:text/csv;charset=utf-8,'
    for chunk in (block.chunks() if block.chunks is not None else (block.text,)):
        yield _quoted(chunk)
    yield (f'">Download {_e(block.filename)}</a>: '
           f'{_e(block.what)}, {rows} row{"" if rows == 1 else "s"}.</p>')


def _block(block, ids):
    if isinstance(block, Text):
        return f"<pre>{_e(block.text)}</pre>" if block.pre else f"<p>{_e(block.text)}</p>"
    if isinstance(block, Table):
        return _table(block, ids)
    if isinstance(block, Figure):
        return _figure(block, ids)
    if isinstance(block, Data):
        return "".join(_data(block))
    raise TypeError(f"no HTML for {type(block).__name__}")


def render(report, date):
    """The report as the text of one HTML page."""
    return "".join(render_parts(report, date))


def render_parts(report, date):
    """:func:`render` in pieces, to be written as they come: a big matrix's CSV is never held whole."""
    ids = _Ids()
    nav = " ".join(f'<a href="#{_e(s.id)}">{_e(s.title)}</a>' for s in report.sections)
    yield (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
           f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
           f'<meta name="viewport" content="width=device-width, initial-scale=1">'
           f'<meta name="generator" content="corelat {_e(__version__)}">'
           f"<title>{_e(report.title)}</title><style>{_CSS}</style></head>\n<body>"
           f'<header><h1>{_e(report.title)}</h1><p class="headline">{_e(report.headline)}</p>'
           f"<nav>{nav}</nav></header>\n<main>\n")
    for k, s in enumerate(report.sections):
        yield ("\n" if k else "") + f'<section id="{_e(s.id)}"><h2>{_e(s.title)}</h2>\n'
        for m, b in enumerate(s.blocks):
            if m:
                yield "\n"
            if isinstance(b, Data):
                yield from _data(b)
            else:
                yield _block(b, ids)
        yield "</section>"
    yield ("\n</main>"
           f"<footer>Written by corelat {_e(__version__)} on {_e(date)}. One file: everything it shows "
           f"is inside it; it loads nothing from the network.</footer>\n"
           f"<script>{_SCRIPT}</script></body></html>\n")
