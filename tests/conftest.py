"""Shared test fixtures.

Tests run against the installed package. Real-machine fixtures live in ``../shared`` beside the
checkout (CI lays it there). Where it is absent (a plain clone) the tests read what ships instead: the
published result files of the package's gallery (``corelat/examples/gallery``) and two of the nine hwloc
dumps (``tests/data/hwloc``); a test that needs one of the other seven skips and says so.
"""

import importlib.util
import os
import pathlib
import signal
import tarfile
import warnings

import kernelguard
import pytest
from hypothesis import settings

# Hypothesis's default 200 ms deadline per example is a timing assertion, and tests here never judge
# time: on this 2-CPU machine, shared with a second xdist worker and CI's background C checks, one
# example of test_select_exact_names_property took 352 ms once and 0.04 ms when re-run (CI, 3.13).
settings.register_profile("corelat", deadline=None)
settings.load_profile("corelat")

REPO = pathlib.Path(__file__).resolve().parents[1]
pytest_plugins = ["pytester"]  # tests/test_kernelguard.py runs the guard on tests of its own

# A background job (`.ci/run &`, `nohup`) starts with SIGINT ignored, and an ignored signal stays ignored
# across exec: every subprocess a test sends Ctrl-C to would then ignore it. A caught signal is reset
# to the default at exec, so catching it here gives the children the disposition a terminal gives them.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
SHARED = pathlib.Path(os.environ.get("CORELAT_SHARED", REPO.parent / "shared"))
#: What ships beside the tests: two hwloc dumps with their licence (tests/data/hwloc/README.md).
DATA = pathlib.Path(__file__).resolve().parent / "data"
#: The peers' result files, relative to the shared folder.
PEERS = "fixtures/peer-results/core-to-core-latency"


def _gallery():
    """The gallery folder of the corelat that the tests import, found without importing it (conftest is
    read before the kernel guard is registered, and importing corelat here would hide import errors
    from the tests that check them)."""
    spec = importlib.util.find_spec("corelat")
    roots = list(spec.submodule_search_locations or []) if spec else []
    return pathlib.Path(roots[0]) / "examples" / "gallery" if roots else None


def _has_shared():
    return (SHARED / "fixtures").is_dir()


#: The peers' folder the tests read: ../shared's where it is there, else the one the package ships
#: (the same 20 files, the index and the licence).
PEER_FOLDER = SHARED / PEERS if _has_shared() else (_gallery() or SHARED) / "core-to-core-latency"


def pytest_configure(config):
    """Fail a test marked neither ``hw`` nor ``vm`` that runs a kernel of the C extension, in this
    process or in a ``python`` it starts (``tests/kernelguard.py``)."""
    config.pluginmanager.register(kernelguard.Plugin(), "corelat-kernelguard")


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (``-n 2 --dist loadgroup``, as CI runs the suite) the tests that use the CPUs
    (``hw``, ``signals``) form one group, run one after another by one worker, while the pure tests
    spread over the workers: two measurements never share the CPUs, and each runs beside the load of
    the other worker, as on a user's machine."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        if item.get_closest_marker("hw") or item.get_closest_marker("signals"):
            item.add_marker(pytest.mark.xdist_group("cpus"))


@pytest.fixture(scope="session")
def shared_dir(tmp_path_factory):
    """The ``shared/`` folder with real-machine fixtures; without one, a stand-in laid out the same way
    whose peers' folder is the package's gallery and whose hwloc folder is ``tests/data/hwloc``."""
    if _has_shared():
        return SHARED
    if not PEER_FOLDER.is_dir():
        pytest.skip(f"shared fixtures not found at {SHARED}, nor the gallery at {PEER_FOLDER} "
                    "(set CORELAT_SHARED to point at them)")
    stand_in = tmp_path_factory.mktemp("shared")
    for link, target in ((PEERS, PEER_FOLDER), ("fixtures/topology/hwloc", DATA / "hwloc")):
        (stand_in / link).parent.mkdir(parents=True, exist_ok=True)
        (stand_in / link).symlink_to(target, target_is_directory=True)
    return stand_in


# ---------------------------------------------------------------------------------------------
#: The hwloc sysfs dumps in ../shared/fixtures/topology/hwloc/ (each with its expected membership).
HWLOC_DUMPS = (
    "128arm-2pa2n8cluster4co",
    "16amd64-8n2c",
    "16em64t-4s2c2t-offlines",
    "20em64t-hybrid-1p6c2t+2ca4co1t",
    "256ppc-8n8s4t",
    "32intel64-2p8co2t+8ve",
    "48amd64-4pa2n6c-sparse",
    "memorysidecaches",
    "offline-cpu0-node0",
)

# The real sysfs dumps of hwloc's test suite (fixtures/topology/hwloc/NAME.tar.bz2): one top folder
# each, unpacked once per session (per worker under pytest-xdist) and shared by every test file.

# Parts of a dump the reader never looks at; leaving them packed keeps the tests fast (the dumps
# hold tens of thousands of small files). Update this if the reader starts to read any of them.
_SKIP_DIRS = {"cpufreq", "cpuidle", "acpi_cppc", "power", "thermal_throttle", "microcode"}
_SKIP_CACHE_FILES = {
    "size", "ways_of_associativity", "number_of_sets", "coherency_line_size", "uevent",
    "physical_line_partition", "allocation_policy", "write_policy", "cache_disable_0",
    "cache_disable_1",
}  # fmt: skip


def _wanted(name):
    """Whether a member of a dump is needed: sys/devices/system, less the parts skipped above."""
    parts = name.split("/")
    if len(parts) < 4:
        return True
    if parts[1:4] != ["sys", "devices", "system"]:
        return False
    if _SKIP_DIRS.intersection(parts[5:]):
        return False
    return not ("cache" in parts[5:-1] and parts[-1] in _SKIP_CACHE_FILES)


def _unpack(tarball, dest):
    """Unpack the needed part of a dump below ``dest``; return its single top folder.

    Symlinks inside the dump are kept (the "data" filter allows links that stay inside ``dest``).
    """
    with tarfile.open(tarball) as tf:
        members = [m for m in tf.getmembers() if _wanted(m.name)]
        extract(tf, dest, members)
    tops = list(dest.iterdir())
    assert len(tops) == 1 and tops[0].is_dir(), f"{tarball.name}: expected one top folder, got {tops}"
    return tops[0]


@pytest.fixture(scope="session")
def hwloc_root(shared_dir, tmp_path_factory):
    """A function NAME -> top folder of the unpacked dump NAME (each unpacked once, on first use).

    The folder is shared by every test of the session: read it, never write below it (a test that
    changes files unpacks its own copy with :func:`_unpack`). The top folder is the dump's own, which
    is not always NAME (48amd64-4pa2n6c-sparse unpacks to 48amd64-4d2n6c-sparse).
    """
    folder = shared_dir / "fixtures" / "topology" / "hwloc"
    cache = {}

    def get(name):
        if name not in cache:
            tarball = folder / f"{name}.tar.bz2"
            if not tarball.is_file():
                shipped = sorted(p.name[: -len(".tar.bz2")] for p in (DATA / "hwloc").glob("*.tar.bz2"))
                pytest.skip(f"the hwloc dump {name} is in ../shared only (not at {SHARED}; "
                            f"tests/data/hwloc ships {', '.join(shipped)})")
            cache[name] = _unpack(tarball, tmp_path_factory.mktemp("hwloc"))
        return cache[name]

    return get


@pytest.fixture(scope="session")
def hwloc_topology(hwloc_root):
    """A function NAME, strict=False -> ``corelat.topology(root=hwloc_root(NAME))``, read once.

    The Topology is shared by every test of the session; it is immutable (``records()`` and
    ``to_dict()`` return copies). TopologyWarnings of the read are not shown, as some callers
    silenced them for the dumps with offline CPUs (none of the dumps warns today); with
    ``strict=True`` the calling test fails if the read warned.
    """
    topo_mod = pytest.importorskip("corelat._system.topology")
    cache = {}

    def get(name, strict=False):
        if name not in cache:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", topo_mod.TopologyWarning)
                topo = topo_mod.topology(root=hwloc_root(name))
            said = [str(w.message) for w in caught if issubclass(w.category, topo_mod.TopologyWarning)]
            for w in caught:  # any other warning goes on as if not caught here
                if not issubclass(w.category, topo_mod.TopologyWarning):
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            cache[name] = topo, said
        topo, said = cache[name]
        if strict and said:
            pytest.fail(f"reading the dump {name} warned: {said}")
        return topo

    return get


class ByName:
    """``mapping[NAME]`` is ``get(NAME)``: the dumps of a module fixture, each read on first use, so that
    a dump a plain clone lacks skips only the tests that read it."""

    def __init__(self, get):
        self._get = get

    def __getitem__(self, name):
        return self._get(name)


@pytest.fixture(scope="session", autouse=True)
def _outside_the_source_tree(tmp_path_factory):
    """Run from an empty folder, so that the subprocesses tests start (``python -m corelat``,
    ``python -c``) import the installed package even when pytest was started in the checkout, whose
    ``corelat/`` has no compiled extension."""
    old = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("cwd"))
    yield
    os.chdir(old)


@pytest.fixture(scope="session", autouse=True)
def _installed_package():
    """With CORELAT_TEST_INSTALLED=1 (as .ci/run sets), refuse to test the source tree by mistake."""
    if os.environ.get("CORELAT_TEST_INSTALLED") == "1":
        import corelat

        where = pathlib.Path(corelat.__file__).resolve()
        assert REPO / "corelat" not in where.parents, (
            f"testing the source tree ({where}), not the installed package")


def extract(tar, dest, members=None, filter="data"):
    """``tar.extractall`` with an extraction filter where this Python has them (3.9.17+, 3.11.4+; not
    Debian 12's 3.11.2, the system python3 the README's commands use). The fixtures are trusted."""
    if hasattr(tarfile, "data_filter"):
        tar.extractall(dest, members=members, filter=filter)
    else:
        tar.extractall(dest, members=members)


#: ``python PARTNER_CLI stall|freeze=SECONDS ARGS``: the command line with a stand-in partner thread.
PARTNER_CLI = pathlib.Path(__file__).resolve().parent / "partner_cli.py"


def before_corelat_ran(err):
    """True when a signal's stderr shows it landed before corelat ran: the interpreter was still
    starting (site, runpy) or importing corelat/_early.py, the first thing corelat runs, and no
    handler can be in place before that. Anything later is corelat's to handle."""
    if "Fatal Python error" in err:
        return True
    return "Traceback" in err and "_early.py" not in err and err.count("corelat/") <= 1 and (
        "corelat/" not in err or "import _early" in err)


def cli_command(*args, partner=None):
    """The argv of ``python -m corelat ARGS``; with ``partner`` (``"stall"`` or ``"freeze=SECONDS"``)
    the measuring partner is a stand-in (see ``tests/partner_cli.py``)."""
    import sys

    head = [sys.executable, str(PARTNER_CLI), partner] if partner else [sys.executable, "-m", "corelat"]
    return [*head, *map(str, args)]


def run_cli(*args, env=None, timeout=60, partner=None):
    """Run ``python -m corelat ARGS`` in a subprocess (see :func:`cli_command`); returns
    CompletedProcess (text)."""
    import subprocess

    full_env = dict(os.environ)
    full_env.pop("CORELAT_DEBUG", None)
    full_env.update(env or {})
    return subprocess.run(
        cli_command(*args, partner=partner),
        check=False, capture_output=True, text=True, timeout=timeout, env=full_env, cwd=str(REPO.parent),
    )


#: Seconds a process may take to end after a signal before a test calls it a hang. Loose on purpose:
#: the test's own process shares a loaded machine, so its clock measures its own scheduling as well
#: (a 1 s bound failed at 1.27 s with two test runs and two busy loops on 2 CPUs). How fast each
#: command really ends is measured by benchmarks/exit_time.py (figures in benchmarks/RESULTS.md).
ENDS_WITHIN_S = 10.0


def _pinned_threads(pid):
    """Threads of process ``pid`` other than the main one that are pinned to one CPU."""
    found = []
    try:
        tids = [int(t) for t in os.listdir(f"/proc/{pid}/task") if int(t) != pid]
    except OSError:
        return found
    for tid in tids:
        try:
            if len(os.sched_getaffinity(tid)) == 1:
                found.append(tid)
        except OSError:
            pass  # gone in between
    return found


def interrupt_when_measuring(cmd, timeout=30):
    """Start ``cmd``, wait until its measuring threads exist (deep in a long run), send SIGINT.

    Returns (exit status, seconds from the signal to the exit, stderr). The process is always
    reaped and its pipes closed, also when an assertion fails.
    """
    import signal
    import subprocess
    import time

    # the user's environment
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + timeout
        while not _pinned_threads(p.pid):  # the team is up (NumPy's OpenBLAS threads are not pinned)
            assert p.poll() is None and time.monotonic() < deadline, "the run never started"
            time.sleep(0.02)
        time.sleep(0.3)
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=timeout)
        return p.returncode, time.monotonic() - t0, err
    finally:
        if p.poll() is None:
            p.kill()
        p.communicate()
