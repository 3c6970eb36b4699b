"""What the machine is and what state it is in: the metadata every result carries.

Everything here is read-only and needs no privileges; an unreadable item is None, never an error.
"""

import datetime
import os
import platform
import re
import socket
import sys

from corelat._core import files as _files
from corelat._core.errors import InputError
from corelat._system import cpulist as _cpulist
from corelat._version import __version__


def read_text(path, limit=_files.MAX_SYSFS_BYTES):
    """Contents of a small text file stripped of whitespace and NULs, or None if unreadable."""
    try:
        data = _files.read_bytes(path, limit)
    except OSError:
        return None
    return data.decode("utf-8", errors="replace").replace("\0", "").strip()


def cpu_count():
    """The number of online CPUs, as ``os.cpu_count()`` says, without its blocking reads.

    ``os.cpu_count()`` is the C library's ``sysconf(_SC_NPROCESSORS_ONLN)``, which opens
    ``/sys/devices/system/cpu/online`` (then ``/proc/stat``) with a blocking open: where that is a
    FIFO the process waits forever. The same files are read here with the bounded reader, then the
    process's affinity stands in; None where none says anything.
    """
    if not sys.platform.startswith("linux"):
        return os.cpu_count()  # no sysfs: the C library asks the kernel
    text = read_text("/sys/devices/system/cpu/online")
    if text:
        try:
            return len(_cpulist.parse(text, limit=1 << 22))
        except InputError:
            pass
    stat = read_text("/proc/stat", _files.MAX_PROC_BYTES) or ""
    n = sum(1 for line in stat.splitlines() if re.match(r"cpu\d", line))
    if n:
        return n
    try:
        return len(os.sched_getaffinity(0)) or None
    except OSError:
        return None


def cpuinfo(root="/"):
    """(model name, set of CPU flags) from /proc/cpuinfo; (None, set()) where it says nothing."""
    text = read_text(os.path.join(root, "proc/cpuinfo"), _files.MAX_PROC_BYTES) or ""
    model, flags = None, set()
    parts = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key, value = key.strip().lower(), value.strip()
        if key in ("model name", "cpu model", "cpu", "hardware", "processor") and value and not model:
            if key != "processor" or not value.isdigit():
                model = value
        elif key in ("flags", "features") and not flags:
            flags = set(value.split())
        elif key in ("cpu implementer", "cpu part") and key not in parts:
            parts[key] = value
    if model is None and parts:
        model = "ARM implementer {} part {}".format(parts.get("cpu implementer", "?"),
                                                    parts.get("cpu part", "?"))
    return model, flags


def hypervisor(flags=None):
    """Name of the hypervisor we run under, "yes" if only the CPU flag says so, or None if bare metal."""
    kind = read_text("/sys/hypervisor/type")
    if kind:
        return kind
    vendor = read_text("/sys/class/dmi/id/sys_vendor") or ""
    product = read_text("/sys/class/dmi/id/product_name") or ""
    if flags is None:
        flags = cpuinfo()[1]
    if "hypervisor" in flags:
        for name in ("KVM", "QEMU", "VMware", "Xen", "Microsoft", "Amazon EC2", "Google", "VirtualBox"):
            if name.lower() in (vendor + " " + product).lower():
                return name
        return "yes"
    return None


def governor():
    """The cpufreq governor of cpu0 (None where cpufreq is not exposed, as in most VMs)."""
    return read_text("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")


def boost():
    """True/False if turbo/boost is on/off, None if unknown."""
    v = read_text("/sys/devices/system/cpu/cpufreq/boost")
    if v in ("0", "1"):
        return v == "1"
    v = read_text("/sys/devices/system/cpu/intel_pstate/no_turbo")
    if v in ("0", "1"):
        return v == "0"
    return None


def smt_active():
    """True/False if SMT is active, None if the kernel does not say."""
    v = read_text("/sys/devices/system/cpu/smt/active")
    return None if v not in ("0", "1") else v == "1"


def tsc_flags_ok(flags):
    """The kernel reports a TSC that runs at a constant rate through sleep states."""
    return {"constant_tsc", "nonstop_tsc"} <= set(flags)


def microcode(root="/"):
    """The CPU's microcode revision where Linux tells it (sysfs, else /proc/cpuinfo); None elsewhere."""
    v = read_text(os.path.join(root, "sys/devices/system/cpu/cpu0/microcode/version"))
    if v:
        return v
    for line in (read_text(os.path.join(root, "proc/cpuinfo"), _files.MAX_PROC_BYTES) or "").splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() == "microcode":
            return value.strip() or None
    return None


def hostname():
    """This machine's host name (the default name of what it measures)."""
    return socket.gethostname()


def collect():
    """Metadata about this machine and process, as a JSON-serialisable dict."""
    import numpy

    model, flags = cpuinfo()
    return {
        "corelat_version": __version__,
        "cpu_model": model,
        "hostname": hostname(),
        "kernel_release": platform.release(),
        "os": platform.system(),
        "machine": platform.machine(),
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "governor": governor(),
        "boost": boost(),
        "smt_active": smt_active(),
        "hypervisor": hypervisor(flags),
        "microcode": microcode(),
        "cpu_count": cpu_count(),
        "allowed_cpus": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "argv": list(sys.argv),
    }
