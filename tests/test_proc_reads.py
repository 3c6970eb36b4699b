"""Every /proc and sysfs read goes through the bounded reader (issue 34 item 16): a FIFO or a
character device mounted over such a file must never stall corelat, so no plain open() and no
``os.cpu_count()`` (glibc opens /sys/devices/system/cpu/online blocking) is left on these paths."""

import importlib
import os

import pytest

from corelat._core import files, status


@pytest.fixture
def bounded_reads(monkeypatch):
    """The paths read through :func:`corelat._core.files.read_bytes`, answered from ``replies``."""
    seen, replies = [], {}

    def fake(path, limit):
        seen.append(str(path))
        if str(path) not in replies:
            raise files.Refused(22, "a FIFO (named pipe), not a regular file", path)
        return replies[str(path)]

    monkeypatch.setattr(files, "read_bytes", fake)
    return seen, replies


def test_the_umask_is_read_through_the_bounded_reader(bounded_reads):
    seen, replies = bounded_reads
    replies["/proc/self/status"] = b"Name:\tpython\nUmask:\t0027\nState:\tR\n"
    assert files._new_file_mode() == 0o640
    assert seen == ["/proc/self/status"]


def test_a_refused_proc_status_gives_the_default_mode(bounded_reads):
    assert files._new_file_mode() == 0o644


def test_the_memory_in_use_is_read_through_the_bounded_reader(bounded_reads, monkeypatch):
    seen, replies = bounded_reads
    replies["/proc/self/statm"] = b"1000 10 5 1 0 100 0\n"
    monkeypatch.setattr(status.resource, "getrlimit",
                        lambda what: (8 << 20, 8 << 20) if what == status.resource.RLIMIT_STACK
                        else (1 << 30, 1 << 30))
    assert status._address_space_short() is None  # 4 MB in use: room for two more stacks
    assert seen == ["/proc/self/statm"]


def test_the_fleet_readers_count_cpus_without_os_cpu_count(monkeypatch):
    def blocked():
        raise AssertionError("os.cpu_count() opens /sys/devices/system/cpu/online blocking")

    monkeypatch.setattr(os, "cpu_count", blocked)
    from corelat._fleet import readers

    readers = importlib.reload(readers)  # THREADS is counted as the module loads
    assert 1 <= readers.THREADS <= 4

    def refused(pid):
        raise OSError("no affinity here")

    monkeypatch.setattr(os, "sched_getaffinity", refused)
    assert readers.workers() >= 1
