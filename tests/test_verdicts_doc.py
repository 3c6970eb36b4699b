"""The administrators' page (docs/verdicts.md) runs as written: its Slurm prolog and its NHC check,
with this machine judged against a reference it is off from (100 times faster: exit 3, a drain), and
against one it cannot be judged by (a bad file: exit 2, logged, not drained). Only the paths are
replaced (the reference, the textfile folder); scontrol and logger are stand-ins that record."""

import os
import re
import subprocess
import sys

import pytest

import corelat

DOC = os.path.join(os.path.dirname(__file__), os.pardir, "docs", "verdicts.md")
pytestmark = [pytest.mark.hw, pytest.mark.slow]


def _block(after):
    """The first ```bash block after the heading ``after``."""
    with open(DOC, encoding="utf-8") as f:
        text = f.read()
    tail = text[text.index(after):]
    return re.search(r"```bash\n(.*?)```", tail, re.S).group(1)


@pytest.fixture
def place(tmp_path):
    """A PATH with corelat (this Python's), scontrol and logger stand-ins; the paths of the page."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "corelat").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m corelat "$@"\n')
    for tool in ("scontrol", "logger"):
        (bin_ / tool).write_text(f'#!/bin/sh\necho "{tool} $*" >> "{tmp_path}/calls"\n')
    for f in bin_.iterdir():
        f.chmod(0o755)
    (tmp_path / "textfile").mkdir()
    r = corelat.measure(sorted(corelat.allowed_cpus())[:2], round_trips=50, samples=20, timeout=30)
    fast = corelat.LatencyResult(cpus=r.cpus, kernel=r.kernel, samples=r.samples / 100, name="ref",
                                 metadata=r.metadata)
    corelat.reference(fast, name="fast-ref").save(tmp_path / "ref.npz")
    (tmp_path / "bad.npz").write_bytes(b"not a reference")
    env = {**os.environ, "PATH": f"{bin_}:{os.environ['PATH']}", "SLURMD_NODENAME": "cn007"}
    env.pop("CORELAT_DEBUG", None)
    return tmp_path, env


def _as_written(script, tmp_path, ref):
    return (script.replace("/etc/corelat/ref.npz", str(tmp_path / ref))
            .replace("/var/lib/node_exporter/textfile", str(tmp_path / "textfile")))


def _calls(tmp_path):
    calls = tmp_path / "calls"
    return calls.read_text().splitlines() if calls.exists() else []


def test_the_prolog_drains_a_node_that_is_off_and_logs_one_it_cannot_judge(place):
    tmp_path, env = place
    if len(corelat.allowed_cpus()) < 2:
        pytest.skip("needs two CPUs")
    prolog = _block("## A Slurm prolog")
    p = subprocess.run(["bash", "-c", _as_written(prolog, tmp_path, "ref.npz")], env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr  # a prolog that fails would drain the node without a reason
    (drain,) = _calls(tmp_path)
    assert drain.startswith("scontrol update nodename=cn007 state=drain reason=corelat: "), drain
    assert "fast-ref" in drain, drain
    assert "corelat_" in (tmp_path / "textfile" / "corelat.prom").read_text()
    os.remove(tmp_path / "calls")
    p = subprocess.run(["bash", "-c", _as_written(prolog, tmp_path, "bad.npz")], env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    (logged,) = _calls(tmp_path)
    assert logged.startswith("logger -t corelat verify exit 2: "), logged


def test_the_nhc_check_dies_with_the_verdicts_line(place):
    tmp_path, env = place
    if len(corelat.allowed_cpus()) < 2:
        pytest.skip("needs two CPUs")
    check = _as_written(_block("## An NHC check"), tmp_path, "ref.npz")
    driver = check + '\nfunction die() { echo "die $1 $2"; }\ncheck_corelat\necho "returned $?"\n'
    p = subprocess.run(["bash", "-c", driver], env=env, capture_output=True, text=True, timeout=120)
    out = p.stdout.splitlines()
    assert out[-1] == "returned 1", p.stdout + p.stderr
    assert out[-2].startswith("die 1 cn007: ") and "fast-ref" in out[-2], p.stdout
