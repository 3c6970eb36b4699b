"""The fleet's classes of pairs in words (column headings and labels of the report), a node's verdicts
against the baseline and the outlier thresholds: what the fleet result and its text (fleet_text.py) share."""

from __future__ import annotations

#: A node's verdict against the fleet's baseline (``metadata["baseline"]["nodes"][node]["status"]``).
BASELINE_OK, BASELINE_OFF, BASELINE_NOT_JUDGED = "ok", "off", "not judged"

#: A class median deviating by more than this fraction of the group's median can be an outlier...
REL_THRESHOLD = 0.10

#: ... when it also deviates by more than this many robust standard deviations (1.4826 × MAD).
MAD_THRESHOLD = 4.0

#: Groups smaller than this are reported, but no node in them is called an outlier.
MIN_GROUP = 3

_LABELS = {
    "smt": ("SMT", "SMT siblings"),
    "l2": ("L2", "same L2"),
    "l3": ("L3", "same L3"),
    "package": ("x-L3", "across L3, same package"),
    "packages": ("x-pkg", "across packages"),
    "within1": ("group", "within latency groups"),
    "across": ("x-group", "across latency groups"),
    "cores": ("cores", "between cores"),
}


def short_label(name):
    """Column heading for a class (``"x-pkg"``)."""
    if name in _LABELS:
        return _LABELS[name][0]
    return f"group{name[6:]}" if name.startswith("within") else name


def label(name):
    """A class in words (``"across packages"``)."""
    if name in _LABELS:
        return _LABELS[name][1]
    return f"within latency level {name[6:]}" if name.startswith("within") else name
