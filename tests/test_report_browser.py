"""The reports as a person sees them: each kind rendered by a real, headless Chromium (issue 21).

Marker ``browser`` (CI: .ci/steps/47-report.sh, which installs Debian's ``chromium``): a screenshot
that is not blank (pixel statistics), the DOM after the page's scripts ran (``--dump-dom``) holding
the sections and the hover values, no console message at all (an error, a CSP refusal of a request),
and no web address in the DOM. Where it can, Chromium runs in an empty network namespace
(``unshare -n``): the page has nothing to reach. The PDF is read with poppler's pdfinfo/pdftoppm.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import numpy as np
import pytest
from conftest import PEER_FOLDER

import corelat
from corelat._fleet import synth

pytest.importorskip("matplotlib")

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PEERS = str(PEER_FOLDER)  # ../shared's, or the gallery's where a plain clone has none
XEON = os.path.join(PEERS, "Dual Intel(R) Xeon Gold 6242 @ 2.8GHz.csv")
I12900K = os.path.join(PEERS, "Intel Core i9-12900K.csv")
CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
#: A browser that does not finish in this time has hung: the test fails, never waits on.
BROWSER_TIMEOUT_S = 120


def _isolated():
    """The command prefix that runs Chromium without a network (empty namespace), where allowed."""
    if shutil.which("unshare") and subprocess.run(["unshare", "-n", "true"], capture_output=True,
                                                  timeout=30).returncode == 0:
        return ["unshare", "-n"]
    return []


def _chromium(*args):
    if CHROMIUM is None:
        pytest.skip("no chromium here (Debian: apt-get install chromium; CI's 00-system step installs it)")
    # --disable-dev-shm-usage: shared memory in /tmp, whatever /dev/shm's size (a container's is often
    # 64 MB). Debian's wrapper adds it only under 3.8 GB free, and its check fails where /dev/shm is
    # mounted twice (`[: N: unexpected operator`): passed here, every host runs Chromium alike.
    cmd = [*_isolated(), CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
           "--hide-scrollbars", "--no-first-run", "--disable-extensions", "--enable-logging=stderr", "--v=0",
           *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=BROWSER_TIMEOUT_S,
                          env={**os.environ, "HOME": os.environ.get("TMPDIR", "/tmp")})


def _look(page, tmp_path):
    """(DOM after scripts, screenshot pixels as an (h, w, 3) float array); no console message."""
    url = page.resolve().as_uri()
    dom = _chromium("--virtual-time-budget=5000", "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    console = [line for line in dom.stderr.splitlines() if ":CONSOLE" in line]
    assert not console, console
    shot = tmp_path / (page.stem + ".png")
    got = _chromium("--window-size=1280,1400", f"--screenshot={shot}", url)
    assert got.returncode == 0 and shot.exists(), got.stderr[-2000:]
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)[..., :3]
    return dom.stdout, pixels


def _check(dom, pixels, sections):
    found = re.findall(r'<section id="([a-z-]+)">', dom)
    assert found == sections
    assert not re.search(r"\b(https?|ftp|wss?):", dom), "a web address in the page"
    grey = pixels.mean(axis=2)
    assert grey.std() > 0.05, "the screenshot is blank"
    assert (grey < 0.9).mean() > 0.03, "hardly anything drawn"
    assert len(np.unique((pixels * 255).astype(np.uint8).reshape(-1, 3), axis=0)) > 50, "no figure colours"


def _hovered(dom, n):
    # the script ran: it told the caption how many values the heatmap carries
    assert re.search(rf"<figcaption>[^<]*Point at a cell for its value \({n} × {n} values\)", dom)


@pytest.mark.skipif(not os.path.exists(XEON), reason="peer files not found")
def test_latency_report_in_a_browser(tmp_path):
    page = tmp_path / "xeon.html"
    corelat.report(XEON, page)
    dom, pixels = _look(page, tmp_path)
    _check(dom, pixels, ["summary", "heatmap", "distribution", "structure", "topology", "warnings", "method",
                         "machine", "data"])
    _hovered(dom, 64)
    assert '"cpus":[0,32,' in dom or '"cpus":[' in dom


def test_measured_result_and_pdf(tmp_path):
    r = corelat.load(corelat.example_files()[0])
    page = tmp_path / "vm.html"
    corelat.report(r, page)
    dom, pixels = _look(page, tmp_path)
    _check(dom, pixels, ["summary", "heatmap", "distribution", "structure", "topology", "warnings", "method",
                         "machine", "data"])
    _hovered(dom, 2)
    pdf = tmp_path / "vm.pdf"
    corelat.report(r, pdf)
    if not shutil.which("pdfinfo"):
        pytest.skip("no pdfinfo/pdftoppm here (Debian: poppler-utils)")
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, timeout=60,
                          check=True).stdout
    pages = int(re.search(r"Pages:\s+(\d+)", info).group(1))
    assert pages >= 3 and ("A4" in info or "595" in info)
    subprocess.run(["pdftoppm", "-r", "30", "-png", str(pdf), str(tmp_path / "page")], check=True, timeout=60)
    import matplotlib.image

    for k in range(1, pages + 1):
        png = next(tmp_path.glob(f"page-{k:0{len(str(pages))}d}.png"))
        grey = matplotlib.image.imread(png)[..., :3].mean(axis=2)
        assert (grey < 0.8).mean() > 0.001, f"page {k} of the PDF is blank"


@pytest.mark.skipif(not os.path.exists(XEON), reason="peer files not found")
def test_comparison_in_a_browser(tmp_path):
    page = tmp_path / "cmp.html"
    corelat.report([XEON, I12900K], page)
    dom, pixels = _look(page, tmp_path)
    _check(dom, pixels, ["summary", "heatmap", "classes", "warnings", "machine", "data"])


def test_fleet_in_a_browser(tmp_path):
    base = corelat.LatencyResult.from_matrix(np.array([[np.nan, 30, 90, 90], [30, np.nan, 90, 90],
                                                       [90, 90, np.nan, 30], [90, 90, 30, np.nan]]),
                                             name="base", metadata={"cpu_model": "Synthetic 4-CPU"})
    cls = next(iter(synth.class_spread(base)))
    f = corelat.fleet(synth.copies(base, 60, seed=2, slow=(7, cls, 1.8)), name="synthetic")
    page = tmp_path / "fleet.html"
    corelat.report(f, page)
    dom, pixels = _look(page, tmp_path)
    _check(dom, pixels, ["verdict", "groups", "figures", "settings", "nodes", "machine", "data"])
    nodes = dom.split('<section id="nodes">')[1].split("</section>")[0]
    assert "outlier: node007" in dom and nodes.count("<tr><td>node0") == 60


@pytest.mark.parametrize("kind", ["placement", "smt", "locks"])
def test_other_kinds_in_a_browser(tmp_path, kind):
    from test_report import _locks, _smt, _synthetic_placement

    result = {"placement": _synthetic_placement, "smt": _smt, "locks": _locks}[kind]()
    page = tmp_path / f"{kind}.html"
    corelat.report(result, page)
    dom, pixels = _look(page, tmp_path)
    first = {"placement": ["summary", "heatmap", "structure"], "smt": ["summary"], "locks": ["summary"]}[kind]
    last = ["data"] if kind == "placement" else []
    _check(dom, pixels, [*first, "topology", "warnings", "method", "machine", *last])
