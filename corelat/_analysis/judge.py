"""``corelat.verify``: one machine judged against a reference, per latency class.

The machine's pairs are classed by the reference's classification (its ``codes``, matched by CPU
id), never by classes found again on the machine: a machine whose structure is wrong would
otherwise be judged by its own wrong structure. A class's value is the median of its measured
pairs (pairs a sampled sweep only estimated do not count). It is within when it lies within the
reference's tolerance of the centre; a class measured on few pairs has that tolerance widened to
``SPREAD_FACTOR`` standard errors of its median (the reference's spread of the class's pairs, over
the square root of the pairs measured), so that a short, sampled measurement is not called off
for the pairs it happened to draw.

A machine of another shape (CPUs missing or extra, another CPU model) is a finding of the verdict,
not an error: the classes are still judged on the CPUs both have.
"""

from __future__ import annotations

import math
import os
from typing import Any

from corelat._analysis.baseline import MEDIAN_SE, SPREAD_FACTOR, aligned, as_results, class_figures
from corelat._core import text as _text
from corelat._core.errors import InputError, InputTypeError
from corelat._core.protocol import thaw
from corelat._core.types import Path
from corelat._results.latency import LatencyResult
from corelat._results.load import load
from corelat._results.reference import Reference
from corelat._results.verdict import ClassVerdict, Verdict
from corelat._system import cpulist as _cpulist

#: CPU ids a finding lists one by one; more are written as ranges.
SHOWN_CPUS = 8


def _reference(ref: Any) -> tuple[Reference, str | None]:
    if isinstance(ref, Reference):
        return ref, None
    if not isinstance(ref, (str, os.PathLike)):
        raise InputTypeError(f"verify() takes a Reference or the path of a reference file, not "
                             f"{type(ref).__name__}")
    path = os.fspath(ref)
    got = load(path)
    if not isinstance(got, Reference):
        raise InputError(f"{path} holds a {type(got).__name__}, not a reference (make one with "
                         "'corelat reference FILE... -o REF.npz' or corelat.reference())")
    return got, path


def _stem(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]


def node_name(result: LatencyResult, path: str | None) -> str:
    """The judged machine's name: its host name where recorded, else its file's stem, else its name."""
    host = result.metadata.get("hostname")
    if host:
        return str(host)
    file = path or result.metadata.get("path")
    return _stem(file) if file else (result.name or "this machine")


def cpu_text(cpus: list[int]) -> str:
    """``CPUs 64, 65``; more than :data:`SHOWN_CPUS` as ranges (``CPUs 16-31``), cut at 60 characters."""
    shown = ", ".join(str(c) for c in cpus) if len(cpus) <= SHOWN_CPUS else _cpulist.format(cpus)
    return f"CPU{'s' if len(cpus) != 1 else ''} {_text.shortened(shown, 60)}"


def shape_findings(result: LatencyResult, ref: Reference) -> list[str]:
    """How ``result``'s machine differs in shape from the reference's: CPUs missing or extra, CPU model."""
    have, want = set(result.cpus), set(ref.cpus)
    findings = []
    missing, extra = sorted(want - have), sorted(have - want)
    if missing or extra:
        offline = set(thaw(result.metadata.get("topology") or {}).get("offline") or ())
        why = []
        if missing:
            gone = [c for c in missing if c in offline]
            absent = [c for c in missing if c not in offline]
            if gone:
                why.append(f"{cpu_text(gone)} offline")
            if absent:
                why.append(f"{cpu_text(absent)} missing")
        if extra:
            why.append(f"{cpu_text(extra)} not in the reference")
        count = (f"{len(have)} CPUs where the reference has {len(want)}" if len(have) != len(want)
                 else f"other CPUs than the reference's {len(want)}")
        findings.append(f"{count} ({'; '.join(why)})")
    model, want_model = result.metadata.get("cpu_model"), ref.cpu_model
    if model and want_model and " ".join(str(model).split()) != want_model:
        findings.append(f"CPU model {model} where the reference has {want_model}")
    return findings


def _check_kernel(result: LatencyResult, ref: Reference) -> None:
    if "unknown" not in (result.kernel, ref.kernel) and result.kernel != ref.kernel:
        raise InputError(f"the result was measured with kernel {result.kernel} and the reference with "
                         f"{ref.kernel}: their latencies are not comparable (measure with --kernel "
                         f"{ref.kernel})")


def verify(result: LatencyResult | Path, reference: Reference | Path, *, name: str | None = None) -> Verdict:
    """Judge one machine against a reference.

    Parameters
    ----------
    result : LatencyResult or path
        The machine's latency result (a corelat ``.npz``, a core-to-core-latency CSV, a c2clat
        file, or a result in memory).
    reference : Reference or path
        What the machine should look like (:func:`corelat.reference`).
    name : str, optional
        What the verdict calls the machine (default: its host name where recorded, else the
        file's name without its extension).

    Returns
    -------
    Verdict
        ``ok``, ``exit_status`` (0 within, 3 off, 1 a class not measured), ``line`` and per
        class the measured value, the reference's centre and tolerance, the ratio and whether it
        is within. A machine of another shape (CPUs missing, another CPU model) is a finding of
        the verdict, not an error.

    Raises
    ------
    InputError
        For a file that is not a latency result or not a reference, or a result measured with
        another kernel than the reference's.

    Examples
    --------
    >>> import corelat
    >>> r = corelat.load(corelat.example_files()[0])
    >>> v = corelat.verify(r, corelat.reference(r, name="vm"), name="cn007")
    >>> v.line.startswith("cn007: ok, 1 class within its tolerance of vm ("), v.exit_status
    (True, 0)
    """
    ref, ref_path = _reference(reference)
    if not isinstance(result, (LatencyResult, str, os.PathLike)):
        raise InputTypeError(f"verify() judges one result (a LatencyResult or a path), not "
                             f"{type(result).__name__}")
    [(r, path)] = as_results(result, "verify()")
    _check_kernel(r, ref)
    values = aligned(r, ref.cpus)
    symmetric = bool(r.metadata.get("symmetric", True))
    judged = []
    for k, cls in enumerate(ref.classes):
        measured, _, pairs = class_figures(values, ref.codes, k, symmetric)
        tol = float(ref.tolerance[k])
        if pairs:
            tol = max(tol, SPREAD_FACTOR * MEDIAN_SE * float(ref.spread[k]) / math.sqrt(pairs))
        judged.append(ClassVerdict(cls, measured, float(ref.centre[k]), tol, pairs))
    md = {"file": path or r.metadata.get("path"), "reference_file": ref_path,
          "hostname": r.metadata.get("hostname"),
          "date": r.metadata.get("date"), "cpu_model": r.metadata.get("cpu_model"),
          "elapsed_s": r.metadata.get("elapsed_s"), "kernel": r.kernel}
    widened = [c.cls for k, c in enumerate(judged) if c.tolerance > float(ref.tolerance[k])]
    if widened:
        md["notes"] = [f"tolerance widened for the pairs measured: {', '.join(widened)} (few measured pairs "
                       "of a spread class; a fuller measurement judges more tightly)"]
    ref_name = ref.name or (_stem(ref_path) if ref_path else "the reference")
    return Verdict(name or node_name(r, path), ref_name, judged, findings=shape_findings(r, ref),
                   metadata={k: v for k, v in md.items() if v is not None})


def judged_cpus(reference: Reference, allowed: Any) -> list[int]:
    """The reference's CPUs among ``allowed`` (this machine's): what a verify run measures."""
    allowed = set(allowed)
    return [c for c in reference.cpus if c in allowed]

