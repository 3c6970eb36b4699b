"""CPU list syntax shared by the CLI and sysfs: ``0,2,4-7`` (and ``0-15:2`` strides)."""

from corelat._core.errors import InputError


def _shown(text):
    return repr(text) if len(text) <= 60 else repr(text[:57] + "...")


def parse(text, limit=None, *, empty=False, max_cpu=None):
    """Parse a CPU list like ``"0,2,4-7"`` into a list of ints, in the order written.

    With ``limit``, a list of more than ``limit`` CPUs is refused before it is built (the CPU count
    a machine can have bounds any sensible list; see :func:`corelat._system.validate.possible_cpus`).
    ``empty=True`` accepts ``""`` (sysfs writes it for an empty set); ``max_cpu`` refuses ids at or
    above it. Strides like ``0-15:2`` are understood.
    """
    if isinstance(text, str) and empty and not text.strip():
        return []
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"empty CPU list {text!r}" if not isinstance(text, str) or len(text) < 60
                         else "empty CPU list")
    out = []
    for part in text.replace(" ", "").strip(",").split(","):
        if not part:
            raise InputError(f"bad CPU list {_shown(text)}: empty item")
        rng, _, step_s = part.partition(":")
        lo_s, dash, hi_s = rng.partition("-")
        try:
            lo = int(lo_s)
            hi = int(hi_s) if dash else lo
            step = int(step_s) if step_s else 1
        except ValueError:
            raise InputError(f"bad CPU list {_shown(text)}: {_shown(part)} is not a CPU number or range") \
                from None
        if lo < 0 or hi < lo or step < 1:
            raise InputError(f"bad CPU list {_shown(text)}: {_shown(part)} is not a valid range")
        if max_cpu is not None and hi >= max_cpu:
            raise InputError(f"bad CPU list {_shown(text)}: CPU {hi} is beyond {max_cpu - 1}")
        if hi - lo > 1_000_000:
            raise InputError(f"bad CPU list {_shown(text)}: range {_shown(part)} is absurdly large")
        items = range(lo, hi + 1, step)
        if limit is not None and len(out) + len(items) > limit:
            raise InputError(f"CPU list {_shown(text)} names more than the {limit:,} CPUs this machine can "
                             "have (/sys/devices/system/cpu/possible)")
        out.extend(items)
    return out


def format(cpus):
    """Compact text for a set of CPU ids: ``[0, 1, 2, 5]`` → ``"0-2,5"``."""
    cpus = sorted({int(c) for c in cpus})
    parts = []
    i = 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        parts.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(parts)
