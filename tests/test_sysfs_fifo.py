"""A sysfs whose files are FIFOs (named pipes) never makes corelat hang (issue 34, item 16).

Opening a FIFO for reading waits for a writer that never comes. corelat's own reads go through the
bounded reader (non-blocking open, regular files only); the C library's CPU count does not:
``os.cpu_count()`` opens ``/sys/devices/system/cpu/online`` and the count NumPy's OpenBLAS asks for as
it loads opens ``.../possible``, both with a blocking open. The pure tests redirect the bounded
reader to a FIFO tree in ``tmp_path`` and make ``os.cpu_count`` fail (it is what would block); the
``hw`` tests mount the FIFO tree over ``/sys/devices/system/cpu`` in a private mount namespace
(``unshare -rm``, where this kernel lets users make one) and run each command with a timeout.
"""

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from corelat._core import files as _files
from corelat._system import conditions as _conditions
from corelat._system import sysinfo as _sysinfo
from corelat._system import validate as _validate
from corelat._system.topology import TopologyWarning, topology

CPU_DIR = "/sys/devices/system/cpu"


def _fifo_tree(root, cpus=2, regular=()):
    """A sysfs CPU folder for ``cpus`` CPUs below ``root`` whose files are all FIFOs, except the
    relative paths in ``regular`` (copied from this machine's sysfs, or a ``0-{cpus-1}`` list)."""
    names = [
        "online",
        "possible",
        "present",
        "offline",
        "kernel_max",
        "isolated",
        "nohz_full",
        "smt/active",
        "smt/control",
        "cpufreq/boost",
        "intel_pstate/no_turbo",
    ]
    for cpu in range(cpus):
        d = f"cpu{cpu}"
        names += [f"{d}/online", f"{d}/cpufreq/scaling_governor", f"{d}/microcode/version"]
        names += [
            f"{d}/topology/{n}"
            for n in (
                "physical_package_id",
                "die_id",
                "core_id",
                "core_cpus_list",
                "thread_siblings_list",
                "package_cpus_list",
                "cluster_cpus_list",
            )
        ]
        for i in range(4):
            names += [
                f"{d}/cache/index{i}/{n}"
                for n in ("level", "type", "shared_cpu_list", "shared_cpu_map", "size")
            ]
    for rel in names:
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if rel in regular:
            try:
                shutil.copyfile(os.path.join(CPU_DIR, rel), path)
            except OSError:
                with open(path, "w") as f:
                    f.write(f"0-{cpus - 1}\n")
        else:
            os.mkfifo(path)
    return root


@pytest.fixture
def fifo_sysfs(tmp_path, monkeypatch):
    """The running system's ``/sys/devices/system/cpu`` seen as a FIFO tree by every bounded read,
    and ``os.cpu_count`` failing as the C library would block on that tree."""
    tree = _fifo_tree(str(tmp_path / "cpu"))
    read_bytes = _files.read_bytes

    def redirected(path, limit):
        path = os.fspath(path)
        if path == CPU_DIR or path.startswith(CPU_DIR + "/"):
            path = tree + path[len(CPU_DIR) :]
        return read_bytes(path, limit)

    def blocks():
        raise AssertionError(
            "os.cpu_count() opens /sys/devices/system/cpu/online with a blocking open: "
            "on a FIFO it waits forever"
        )

    monkeypatch.setattr(_files, "read_bytes", redirected)
    monkeypatch.setattr(os, "cpu_count", blocks)
    return tree


def test_every_file_of_the_tree_is_refused_as_a_fifo(fifo_sysfs):
    with pytest.raises(OSError, match="FIFO"):
        _files.read_bytes(os.path.join(CPU_DIR, "online"), _files.MAX_SYSFS_BYTES)


def test_cpu_count_without_the_c_library(fifo_sysfs):
    assert _sysinfo.cpu_count() == len(os.sched_getaffinity(0))


def test_metadata_on_a_fifo_sysfs(fifo_sysfs):
    meta = _sysinfo.collect()
    assert meta["cpu_count"] == len(os.sched_getaffinity(0))
    assert meta["governor"] is None and meta["boost"] is None and meta["smt_active"] is None


def test_possible_cpus_on_a_fifo_sysfs(fifo_sysfs):
    assert _validate.possible_cpus() >= max(os.sched_getaffinity(0)) + 1


def test_live_topology_on_a_fifo_sysfs(fifo_sysfs):
    with pytest.warns(TopologyWarning, match="FIFO|more unreadable"):
        topo = topology()
    assert len(topo) >= 1


def test_checks_on_a_fifo_root(tmp_path):
    root = tmp_path / "root"
    _fifo_tree(str(root / "sys/devices/system/cpu"))
    for rel in (
        "proc/stat",
        "proc/cpuinfo",
        "proc/loadavg",
        "sys/hypervisor/type",
        "sys/devices/system/clocksource/clocksource0/current_clocksource",
    ):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(root / rel)
    for check in (
        _conditions.check_governor,
        _conditions.check_boost,
        _conditions.check_smt,
        _conditions.check_isolated,
        _conditions.check_hypervisor,
        _conditions.check_load,
        _conditions.check_clocksource,
    ):
        item = check(str(root))
        assert item.status is not None
    assert _sysinfo.cpuinfo(str(root)) == (None, set())
    assert _sysinfo.microcode(str(root)) is None


def test_topology_root_of_fifos(tmp_path):
    """``corelat topology --root DIR`` of a FIFO tree ends, with warnings, in a subprocess."""
    _fifo_tree(str(tmp_path / "sys/devices/system/cpu"))
    for args in (["topology", "--root", str(tmp_path)], ["topology", "--root", str(tmp_path), "--json"]):
        proc = subprocess.run(
            [sys.executable, "-m", "corelat", *args], capture_output=True, text=True, timeout=60, check=False
        )
        assert proc.returncode == 0, proc.stderr
        assert "FIFO" in proc.stderr and "Traceback" not in proc.stderr


def test_early_check_names_a_fifo(tmp_path):
    from corelat import _early

    fifo = tmp_path / "possible"
    os.mkfifo(fifo)
    assert _early.blocking_kind(str(fifo)) == "a FIFO (named pipe)"
    assert _early.blocking_kind("/dev/null") == "a character device"
    assert _early.blocking_kind(str(tmp_path / "absent")) is None
    (tmp_path / "plain").write_text("0-1\n")
    assert _early.blocking_kind(str(tmp_path / "plain")) is None
    assert _early.blocking_kind(str(tmp_path)) is None  # a folder: read() fails at once


# ---------------------------------------------------------------------------------------------
# The commands, with the FIFO tree mounted over /sys/devices/system/cpu


def _namespaces():
    if not sys.platform.startswith("linux") or shutil.which("unshare") is None:
        return False
    try:
        return subprocess.run(["unshare", "-rm", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


COMMANDS = [
    ["100", "5"],
    ["-c", "cores", "--order", "topology", "100", "5"],
    ["--strategy", "sample", "100", "5"],
    ["smt", "100", "5"],
    ["placement", "100", "5"],
    ["locks", "-k", "baseline"],
    ["topology"],
    ["topology", "--json"],
    ["check"],
]


def _run_mounted(tmp_path, regular):
    """Each of :data:`COMMANDS` run with the FIFO tree mounted; ``[(args, rc, output)]``."""
    tree = _fifo_tree(str(tmp_path / "cpu"), cpus=os.cpu_count(), regular=regular)
    out = tmp_path / "out"
    out.mkdir()
    lines = [f"mount --bind {tree} {CPU_DIR} || exit 99", "cd /"]
    for i, args in enumerate(COMMANDS):
        argv = " ".join([sys.executable, "-m", "corelat", *args])
        # 124 from timeout: a hang; the limit is far above what these small runs take.
        lines.append(f"timeout -s KILL 60 {argv} > {out}/{i}.txt 2>&1; echo $? > {out}/{i}.rc")
    script = tmp_path / "run.sh"
    script.write_text("\n".join(lines) + "\n")
    proc = subprocess.run(
        ["unshare", "-rm", "bash", str(script)],
        capture_output=True,
        text=True,
        timeout=60 * len(COMMANDS) + 60,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return [
        (args, int((out / f"{i}.rc").read_text()), (out / f"{i}.txt").read_text())
        for i, args in enumerate(COMMANDS)
    ]


needs_namespaces = pytest.mark.skipif(not _namespaces(), reason="no private mount namespace (unshare -rm)")


@pytest.mark.hw
@pytest.mark.slow
@needs_namespaces
def test_commands_end_when_online_is_a_fifo(tmp_path):
    """As the adversary's host had it: every file a FIFO but ``possible`` (NumPy loads)."""
    for args, rc, output in _run_mounted(tmp_path, regular=("possible",)):
        assert rc not in (124, 137), f"corelat {' '.join(args)} hung:\n{output[-2000:]}"
        assert "Traceback" not in output, output
        if args[0] in ("topology", "check") or args[0].isdigit() or args[0] == "--strategy":
            assert rc == 0, f"corelat {' '.join(args)}: {output[-2000:]}"


@pytest.mark.hw
@pytest.mark.slow
@needs_namespaces
def test_commands_refuse_when_possible_is_a_fifo(tmp_path):
    """Every file a FIFO: the C library's count NumPy asks for would block; refused before it loads."""
    for args, rc, output in _run_mounted(tmp_path, regular=()):
        assert rc == 1, f"corelat {' '.join(args)} ({rc}):\n{output[-2000:]}"
        assert output.strip() == textwrap.dedent(f"""\
            corelat: error: cannot start: {CPU_DIR}/possible is a FIFO (named pipe), not a regular file: \
the C library's CPU count, which NumPy asks for as it loads, would wait on it forever""")
