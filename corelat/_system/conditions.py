"""What on this machine can distort a latency measurement, read from sysfs and procfs under a root folder.

Every reader takes a ``root`` folder (``"/"`` for the running system, or a copy of ``/sys`` and
``/proc`` from another machine), so each one can be tested on a fake tree.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import asdict, dataclass
from typing import Any

from corelat._core import files as _files
from corelat._system import cpulist as _cpulist
from corelat._system.timer import timer_info

#: Item statuses: fine, worth knowing, likely to distort results, could not tell.
OK, INFO, WARN, UNKNOWN = "ok", "info", "warn", "unknown"


@dataclass(frozen=True)
class CheckItem:
    """One finding of :func:`corelat.check`: a line of its report.

    Examples
    --------
    >>> import corelat
    >>> item = corelat.CheckItem("governor", "ok", "performance", "the frequency stays fixed")
    >>> item.matters, item.to_dict()["status"]
    (False, 'ok')
    """

    name: str  #: short identifier, e.g. ``"governor"``
    status: str  #: ``"ok"``, ``"info"``, ``"warn"`` or ``"unknown"``
    found: str  #: what was found, in words
    why: str  #: whether and why it matters for latency measurements
    value: object = None  #: the finding in machine-readable form (JSON-serialisable)

    @property
    def matters(self) -> bool:
        """True when the finding is likely to distort measurements."""
        return self.status == WARN

    def to_dict(self) -> dict[str, Any]:
        """The item as a plain dict (for JSON).

        Returns
        -------
        dict
            ``name``, ``status``, ``found``, ``why`` and ``value``.
        """
        return asdict(self)


_CPU = ("sys", "devices", "system", "cpu")

_CPU_NAME = re.compile(r"cpu(\d+)\Z")


def _path(root, *parts):
    return os.path.join(root, *parts)


def _read(path, limit=_files.MAX_SYSFS_BYTES):
    """(text, problem): the file's stripped text, or None and ``"missing"`` / ``"unreadable (...)"``."""
    try:
        data = _files.read_bytes(path, limit)
        return data.decode("utf-8", errors="replace").replace("\0", "").strip(), None
    except FileNotFoundError:
        return None, "missing"
    except OSError as e:
        return None, f"unreadable ({e.strerror or e})"


def _cpu_dirs(root):
    """``{cpu id: folder}`` for the cpuN folders under sysfs (empty if unreadable)."""
    base = _path(root, *_CPU)
    try:
        names = os.listdir(base)
    except OSError:
        return {}
    out = {}
    for name in names:
        m = _CPU_NAME.match(name)
        if m:
            out[int(m.group(1))] = os.path.join(base, name)
    return dict(sorted(out.items()))


def _online(root):
    text, _ = _read(_path(root, *_CPU, "online"))
    if text:
        try:
            return _cpulist.parse(text)
        except ValueError:
            pass
    return list(_cpu_dirs(root)) or None


def _cpuinfo_flags(root):
    text, problem = _read(_path(root, "proc", "cpuinfo"), _files.MAX_PROC_BYTES)
    if text is None:
        return None, problem
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() in ("flags", "features"):
            return set(value.split()), None
    return set(), None


def _fmt_cpus(cpus):
    return _cpulist.format(sorted(cpus)) if cpus else "none"


# -- items -------------------------------------------------------------------------------------------
def check_governor(root="/"):
    """The cpufreq scaling governor of every CPU."""
    found, problems = {}, []
    for cpu, folder in _cpu_dirs(root).items():
        text, problem = _read(os.path.join(folder, "cpufreq", "scaling_governor"))
        if text is not None:
            found.setdefault(text, []).append(cpu)
        elif problem != "missing":
            problems.append(problem)
    if not found:
        if problems:
            return CheckItem("governor", UNKNOWN, f"scaling_governor {problems[0]}",
                             "cannot tell whether the CPUs change frequency with load")
        return CheckItem("governor", UNKNOWN, "cpufreq not exposed (usual in virtual machines, where the "
                         "host sets the frequency)",
                         "cannot tell whether the CPUs change frequency with load")
    text = ", ".join(f"{g} on CPU {_fmt_cpus(c)}" for g, c in sorted(found.items()))
    value = {g: c for g, c in sorted(found.items())}
    if set(found) == {"performance"}:
        return CheckItem("governor", OK, text, "CPUs stay at their top frequency", value)
    return CheckItem("governor", WARN, text,
                     "idle CPUs slow down and ramp up under load: early samples of a pair run slower and "
                     "pairs measured later differ; 'performance' avoids it (cpupower frequency-set -g "
                     "performance, needs root)", value)


def check_boost(root="/"):
    """Turbo/boost: cpufreq/boost (AMD, acpi-cpufreq) or intel_pstate/no_turbo."""
    text, problem = _read(_path(root, *_CPU, "cpufreq", "boost"))
    on = None
    source = "cpufreq/boost"
    if text in ("0", "1"):
        on = text == "1"
    else:
        t2, p2 = _read(_path(root, *_CPU, "intel_pstate", "no_turbo"))
        if t2 in ("0", "1"):
            on, source = t2 == "0", "intel_pstate/no_turbo"
        elif problem == "missing" and p2 != "missing" and p2:
            problem = p2
    if on is None:
        detail = "not exposed" if problem in (None, "missing") else problem
        return CheckItem("boost", UNKNOWN, f"turbo/boost state {detail}",
                         "cannot tell whether the clock speed depends on load and temperature")
    if on:
        return CheckItem("boost", WARN, f"turbo/boost on ({source})",
                         "the clock speed depends on temperature and on how many cores are busy, so "
                         "latencies drift between runs; compare results within one run", True)
    return CheckItem("boost", OK, f"turbo/boost off ({source})", "the clock speed does not wander", False)


def check_smt(root="/"):
    """SMT (hyper-threading): sysfs smt/active and smt/control."""
    active, problem = _read(_path(root, *_CPU, "smt", "active"))
    control, _ = _read(_path(root, *_CPU, "smt", "control"))
    if active not in ("0", "1"):
        detail = "not reported" if problem in (None, "missing") else problem
        return CheckItem("smt", UNKNOWN, f"SMT state {detail}",
                         "cannot tell whether some CPUs are hyperthreads of one core")
    ctl = f", control={control}" if control else ""
    if active == "1":
        return CheckItem("smt", INFO, f"SMT on{ctl}",
                         "sibling CPUs share one core: their pairs read far lower latency (4-10 ns) and "
                         "show as their own group; a sweep over siblings is right, not noise", True)
    return CheckItem("smt", OK, f"SMT off{ctl}", "every CPU is a core of its own", False)


def check_isolated(root="/"):
    """Isolated CPUs (isolcpus) and CPUs without the scheduler tick (nohz_full)."""
    iso, p1 = _read(_path(root, *_CPU, "isolated"))
    nohz, _p2 = _read(_path(root, *_CPU, "nohz_full"))
    if iso is None and nohz is None:
        return CheckItem("isolated", UNKNOWN, f"isolated CPUs {p1}",
                         "cannot tell whether other tasks can run on the measured CPUs")
    parts, value = [], {}
    for label, text in (("isolated", iso), ("nohz_full", nohz)):
        if text is None or text in ("", "(null)"):
            value[label] = []
            continue
        try:
            value[label] = _cpulist.parse(text)
        except ValueError:
            value[label] = text
        parts.append(f"{label}: CPU {text}")
    if not parts:
        return CheckItem("isolated", INFO, "no CPUs isolated (no isolcpus, no nohz_full)",
                         "other tasks and timer ticks share the measured CPUs; on a busy machine that "
                         "shows as outliers and unstable pairs (see load and busy CPUs)", value)
    return CheckItem("isolated", OK, "; ".join(parts),
                     "those CPUs are kept free of other tasks: measure them (--cpus) for the cleanest "
                     "numbers", value)


def check_hypervisor(root="/"):
    """Running under a hypervisor: /sys/hypervisor/type, the CPU flag, DMI vendor and product."""
    kind, _ = _read(_path(root, "sys", "hypervisor", "type"))
    flags, problem = _cpuinfo_flags(root)
    vendor, _ = _read(_path(root, "sys", "class", "dmi", "id", "sys_vendor"))
    product, _ = _read(_path(root, "sys", "class", "dmi", "id", "product_name"))
    dmi = " ".join(x for x in (vendor, product) if x)
    if flags is None and not kind:
        return CheckItem("hypervisor", UNKNOWN, f"/proc/cpuinfo {problem}",
                         "cannot tell whether this is a virtual machine")
    if kind or (flags and "hypervisor" in flags):
        name = kind or next((n for n in ("KVM", "QEMU", "VMware", "Xen", "Microsoft", "Amazon EC2", "Google",
                                         "VirtualBox") if n.lower() in dmi.lower()), None)
        found = f"running under {name or 'a hypervisor'}" + (f" ({dmi})" if dmi and name else "")
        return CheckItem("hypervisor", WARN, found,
                         "vCPUs are threads on the host, which can move them between its cores and "
                         "hyperthreads or deschedule them: the same pair can read 8, 90 or 300 ns. "
                         "Expect bimodal and unstable pairs, and compare within one run", name or True)
    return CheckItem("hypervisor", OK, "bare metal (no hypervisor flag)",
                     "the CPUs are real cores", False)


def check_load(root="/"):
    """The load average against the number of online CPUs."""
    text, problem = _read(_path(root, "proc", "loadavg"), _files.MAX_PROC_BYTES)
    if text is None:
        return CheckItem("load", UNKNOWN, f"/proc/loadavg {problem}", "cannot tell how busy the machine is")
    try:
        loads = [float(x) for x in text.split()[:3]]
    except ValueError:
        return CheckItem("load", UNKNOWN, f"/proc/loadavg unparsable ({text[:40]!r})",
                         "cannot tell how busy the machine is")
    online = _online(root)
    n = len(online) if online else None
    found = f"load average {loads[0]:.2f} {loads[1]:.2f} {loads[2]:.2f}" + (f" on {n} CPUs" if n else "")
    value = {"load": loads, "cpus": n}
    if n and loads[0] / n > 0.25:
        return CheckItem("load", WARN, found,
                         "other work competes with the two measuring threads: partners get descheduled, "
                         "samples get outliers and pairs look unstable", value)
    return CheckItem("load", OK, found, "the machine is mostly idle", value)


def _proc_stat(root):
    text, problem = _read(_path(root, "proc", "stat"), _files.MAX_PROC_BYTES)
    if text is None:
        return None, problem
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0].startswith("cpu") and parts[0] != "cpu":
            try:
                vals = [int(x) for x in parts[1:]]
            except ValueError:
                continue
            vals += [0] * (8 - len(vals))
            out[int(parts[0][3:])] = vals
    return out, None


def check_busy(root="/", interval=0.2, *, sleep=time.sleep):
    """CPUs busy with other work, and steal time, from /proc/stat read twice ``interval`` s apart."""
    a, problem = _proc_stat(root)
    if a is None:
        return CheckItem("busy", UNKNOWN, f"/proc/stat {problem}", "cannot tell which CPUs are busy")
    sleep(interval)
    b, problem = _proc_stat(root)
    if b is None:
        return CheckItem("busy", UNKNOWN, f"/proc/stat {problem}", "cannot tell which CPUs are busy")
    busy, steal = {}, {}
    for cpu in sorted(set(a) & set(b)):
        d = [y - x for x, y in zip(a[cpu], b[cpu])]
        total = sum(d[:8])
        if total <= 0:
            continue
        idle = d[3] + d[4]  # idle + iowait
        busy[cpu] = round(1.0 - idle / total, 3)
        steal[cpu] = round(d[7] / total, 3)
    if not busy:
        return CheckItem("busy", UNKNOWN,
                         f"no CPU time passed in {interval:g} s between two reads of /proc/stat",
                         "cannot tell which CPUs are busy")
    hot = [c for c, v in busy.items() if v > 0.2]
    stolen = [c for c, v in steal.items() if v > 0.05]
    value = {"busy": busy, "steal": steal, "interval_s": interval}
    found = f"over {interval:g} s: " + (
        "busy " + ", ".join(f"CPU {c} {busy[c]:.0%}" for c in hot) if hot else
        f"all {len(busy)} CPUs idle (most busy {max(busy.values()):.0%})")
    if stolen:
        found += "; steal " + ", ".join(f"CPU {c} {steal[c]:.0%}" for c in stolen)
    if hot or stolen:
        return CheckItem("busy", WARN, found,
                         "a measuring thread on a busy CPU shares it with other work (steal: the host ran "
                         "something else on the vCPU), so partners stall; measure idle CPUs (--cpus) or "
                         "stop the other work", value)
    return CheckItem("busy", OK, found, "nothing else runs on the CPUs right now", value)


def check_clocksource(root="/"):
    """The kernel's clock source (which tells whether the kernel trusts the TSC)."""
    base = _path(root, "sys", "devices", "system", "clocksource", "clocksource0")
    cur, problem = _read(os.path.join(base, "current_clocksource"))
    avail, _ = _read(os.path.join(base, "available_clocksource"))
    if cur is None:
        return CheckItem("clocksource", UNKNOWN, f"current_clocksource {problem}",
                         "cannot tell whether the kernel trusts the TSC")
    found = f"{cur}" + (f" (available: {avail})" if avail else "")
    if cur == "tsc":
        return CheckItem("clocksource", OK, found, "the kernel found the TSC synchronized across CPUs", cur)
    if cur in ("kvm-clock", "hyperv_clocksource_tsc_page", "xen", "arch_sys_counter"):
        return CheckItem("clocksource", INFO, found,
                         "a paravirtual or architectural clock: normal on this platform; the one-way "
                         "kernel's own skew check decides whether timers agree", cur)
    return CheckItem("clocksource", WARN, found,
                     "the kernel does not use the TSC for time (it may have found it unstable): "
                     "timers may disagree across CPUs, which the one-way kernel would notice and refuse", cur)


def check_tsc(root="/"):
    """Whether the CPU declares an invariant TSC (constant rate through P- and C-states)."""
    flags, problem = _cpuinfo_flags(root)
    if flags is None:
        return CheckItem("tsc", UNKNOWN, f"/proc/cpuinfo {problem}",
                         "cannot tell whether the timer is invariant")
    if "tsc" not in flags:
        if not flags:
            return CheckItem("tsc", UNKNOWN, "no CPU flags in /proc/cpuinfo",
                             "cannot tell whether the timer is invariant")
        return CheckItem("tsc", INFO, "no TSC (not x86); corelat uses the architectural counter",
                         "aarch64's generic timer has a fixed frequency by architecture", None)
    have = sorted(flags & {"constant_tsc", "nonstop_tsc", "tsc_reliable", "tsc_known_freq"})
    found = "TSC flags: " + (", ".join(have) if have else "none of constant_tsc/nonstop_tsc")
    if {"constant_tsc", "nonstop_tsc"} <= flags:
        return CheckItem("tsc", OK, found + " (invariant)",
                         "the TSC ticks at a constant rate in every power state: corelat times with it", have)
    return CheckItem("tsc", WARN, found + " (not invariant)",
                     "corelat falls back to clock_gettime (about 20 ns a read, absorbed by batching) and "
                     "refuses the one-way kernel", have)


#: A timer step coarser than this is worth a warning: a 5 ns step is a sizeable part of an SMT
#: sibling's 5-10 ns, and per-call lock figures need brackets of many calls to resolve it.
COARSE_TIMER_NS = 5.0


def check_timer_resolution(info=None):
    """The step in which the timer advances, measured at start-up (live machine only)."""
    if info is None:

        try:
            info = timer_info()
        except Exception as e:  # noqa: BLE001 - an item that cannot be measured says so
            return CheckItem("timer_resolution", UNKNOWN, f"not measured ({type(e).__name__}: {e})",
                             "cannot tell how finely the timer resolves an interval")
    step_ns, ticks = float(info["resolution_ns"]), float(info["resolution_ticks"])
    found = (f"{info.get('name')} advances in steps of {ticks:.0f} tick{'s' if ticks != 1 else ''} "
             f"({step_ns:.2f} ns); a read costs {info['overhead_ticks'] / info['ticks_per_ns']:.1f} ns")
    value = {"resolution_ns": step_ns, "resolution_ticks": ticks,
             "delta_histogram": [list(map(int, h)) for h in info.get("delta_histogram", ())]}
    if step_ns > COARSE_TIMER_NS:
        return CheckItem("timer_resolution", WARN, found,
                         f"coarser than {COARSE_TIMER_NS:g} ns: a single timed interval is only known to "
                         "within a step; corelat times batches (round trips, brackets of lock calls) long "
                         "enough to span many steps, but very small sizes cannot be resolved", value)
    return CheckItem("timer_resolution", OK, found,
                     "fine enough: batches of round trips resolve far below a nanosecond", value)
