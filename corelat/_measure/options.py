"""One bag of options for every sweep: :class:`SweepOptions`, validated once, here.

:func:`corelat.measure`, :func:`corelat.smt`, :func:`corelat.placement`,
:func:`corelat.measure_fleet` and their commands take the same keywords, written once: the fields
of :class:`SweepOptions`, each with its default, its type and its documentation.
:func:`sweep_keywords` gives a function that sweeps those keywords: its signature (what
``help()``, :func:`inspect.signature` and the API reference show) and its docstring's Parameters
section are made from the fields, and a keyword that is none of them is refused as Python refuses
it. Each function builds one :class:`SweepOptions` from what it was given and hands it to the
sweep engine (``tests/test_signatures.py`` keeps them one to one).

Validation has two steps, both here: :meth:`SweepOptions.request` checks what does not depend on
the machine (kernel, sizes, sampling plan, order, strategy, re-tests, the form of ``home``);
:meth:`SweepOptions.resolve` reads the CPU selection and the home of the line on this machine.
:meth:`SweepOptions.build` does both, which is what a measurement on this machine wants; a fleet
requests once on every rank and resolves on each node (its CPUs and NUMA nodes are its own).
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import os
import re
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any, Callable, Literal, TypeVar

import numpy as np

from corelat._core.errors import InputError, InputTypeError
from corelat._core.types import RESULT_ORDERS, CPUs, Kernel, Progress, ResultOrder
from corelat._system import selectors as _selectors
from corelat._system.home import check_home, parse_home
from corelat._system.validate import (
    DEFAULT_MAX_SAMPLES,
    DEFAULT_MAX_TIME_PER_PAIR,
    DEFAULT_PRECISION,
    DEFAULT_TIMEOUT,
    RETEST_FRACTION,
    STRATEGIES,
    SamplingPlan,
    allowed_cpus,
    check_order,
    check_params,
    check_sampling,
    check_topology,
    resolve_cpus,
    sampling_parameters,
)


def retest_limit(retest, measured):
    """How many of ``measured`` pairs ``retest`` allows to be measured again (InputError if it is
    neither True, False nor a number of pairs)."""
    if retest is True:
        return max(1, math.ceil(RETEST_FRACTION * measured))
    if retest is False or retest is None:
        return 0
    if isinstance(retest, (int, np.integer)) and retest >= 0:
        return int(retest)
    raise InputError(f"retest must be True, False or a number of pairs, got {retest!r}")


def check_budget(budget):
    """``budget`` as seconds (a float), or None: InputError for one that is no positive, finite
    number of seconds (0, negative, NaN, infinite, text)."""
    if budget is None:
        return None
    if isinstance(budget, bool) or not isinstance(budget, (int, float, np.integer, np.floating)):
        raise InputTypeError(f"budget must be a number of seconds, got {budget!r}")
    seconds = float(budget)
    if not (math.isfinite(seconds) and seconds > 0):
        raise InputError(f"budget must be a positive, finite number of seconds, got {budget!r}")
    return seconds


def _keyword(default, doc, *, public=None, shown=None):
    """A field of :class:`SweepOptions` that is a keyword of every sweeping function: its default and
    its documentation (``public``: the annotation the functions show where the field, normalised,
    holds another type; ``shown``: the type its documentation shows, where not the annotation)."""
    return dataclasses.field(default=default, metadata={"doc": inspect.cleandoc(doc), "public": public,
                                                        "shown": shown})


@dataclasses.dataclass(frozen=True)
class SweepOptions:
    """What a sweep needs, checked: the CPUs, the kernel and its sizes, the sampling plan, the
    budgets, the home of the line, the re-tests, the order, the name, the strategy and progress.

    Make one with :meth:`build` (or :meth:`request` then :meth:`resolve`); the constructor itself
    checks nothing. The fields are the keywords of :func:`corelat.measure`, with their defaults and
    their documentation (what every sweeping function shows, see :func:`sweep_keywords`),
    normalised (``warmup`` is an integer, ``home`` a :class:`~corelat._system.home.Home`, ``cpus``
    a tuple once resolved); ``plan`` is the :class:`~corelat._system.validate.SamplingPlan` that
    ``samples``, ``precision``, ``max_samples`` and ``max_time_per_pair`` make.
    """

    cpus: CPUs = _keyword(None, """
        CPU ids to measure (list, or a string like ``"0,2,4-7"``); None for every CPU this
        process may run on (``os.sched_getaffinity(0)``: taskset and cgroup cpusets apply).
        A string may choose by topology: ``"cores"``, ``"l3"``, ``"node:0+node:1-smt"`` (the
        grammar: :mod:`corelat._system.selectors`); ``metadata["cpu_selection"]`` keeps it.""")
    kernel: Kernel = _keyword("cas", """
        ``"cas"`` (compare-exchange on one line), ``"rw"`` (load/store on two lines),
        ``"oneway"`` (timestamped messages, both directions; needs synchronized timers),
        ``"read-clean"`` / ``"read-modified"`` (a load of a line the other CPU holds clean /
        modified, Intel MLC's HIT / HITM; both directions, one load per value; the chain is half
        the owner's L2 and ``round_trips`` does not apply).""")
    round_trips: int = _keyword(1000, """
        round trips timed together as one sample (messages per sample for
        ``"oneway"``).""")
    samples: int | None = _keyword(None, """
        None (the default): precision-driven sampling, each pair sampled until the 95 % CI of
        its median is within ±``precision`` of it (or ``max_samples`` or ``max_time_per_pair``
        is reached); an integer: exactly that many samples per pair (fixed-size sampling, as
        core-to-core-latency does).""")
    precision: float = _keyword(DEFAULT_PRECISION, """
        for ``samples=None``: the target half-width of each pair's 95 % CI, a fraction of its
        median (0.0001 to 0.5; default ±2 %).""")
    max_samples: int = _keyword(DEFAULT_MAX_SAMPLES, """
        for ``samples=None``: the most samples a pair gets (bounds the result's memory).""")
    max_time_per_pair: float = _keyword(DEFAULT_MAX_TIME_PER_PAIR, """
        for ``samples=None``: seconds each pair may take; pairs that run out are flagged
        ``TARGET_NOT_MET``.""")
    warmup: int | None = _keyword(None, """
        samples run first and discarded, per pair (per chunk in precision-driven mode;
        default: a tenth of ``samples`` or of the first chunk).""")
    timeout: float = _keyword(DEFAULT_TIMEOUT, """
        seconds a thread waits for its partner before the sweep stops with
        :class:`~corelat._core.errors.MeasurementTimeout`.""")
    progress: Progress = _keyword(False, """
        False, True (a progress bar on stderr) or a callable ``fn(done, total)``.""")
    order: ResultOrder | None = _keyword(None, """
        None (the default, as everywhere in corelat): the CPUs in the order given; ``"os"``: CPU
        ids ascending; ``"topology"``: package → node → L3 → core → thread (see
        :meth:`LatencyResult.ordered`; for the latency groups' order,
        ``r.ordered(corelat.structure(r))``).""", shown='{None, "os", "topology"}')
    name: str | None = _keyword(None, """
        label for the result (default: the host name).""")
    strategy: Literal["full", "sample"] = _keyword("full", """
        ``"full"`` (every pair) or ``"sample"`` (enough pairs per topology block pair,
        the rest estimated and flagged ``ESTIMATED``; see :mod:`corelat._measure.sampling`).""")
    partition: Sequence[Sequence[int]] | None = _keyword(None, """
        for ``strategy="sample"``, blocks of CPUs (a list of CPU lists) to use instead
        of the topology read from sysfs.""")
    topology: Any = _keyword(None, """
        for ``strategy="sample"``, the topology to use instead of this machine's (a
        :class:`~corelat.Topology` or its ``records()``; for simulations).""")
    retest: bool | int = _keyword(True, """
        re-measure at the end the pairs that look unstable (bimodal, spread, migrated):
        True (at most a tenth of the pairs, worst first), False, or a number of pairs.""")
    budget: float | None = _keyword(None, """
        seconds the whole sweep may take, set-up (calibration, warm-up) included; None (the
        default): no limit. The pairs are ordered to fit: one pair of every latency class
        first, then more pairs per class while time remains; a pair is started only while the
        time left covers what the pairs so far cost, each capped by the time left. What the
        budget leaves is not an error: those pairs are estimated (``strategy="sample"``, from
        a measured pair of their class) or NaN and flagged ``NOT_REACHED``;
        ``metadata["budget"]`` says the budget, the time used and the counts.""",
        shown="float | None")
    #: a :class:`~corelat._system.home.Home` once requested
    home: Any = _keyword("initiator", """
        where each pair's page lives (see :data:`corelat.HOMES`): ``"initiator"`` (first touch
        by the timing thread, the default), ``"responder"`` (first touch by the other),
        ``"node:K"`` (NUMA node K, by ``mbind``) or ``"cpu:K"`` (a third CPU K, not one of
        ``cpus``, first-touches and writes the page before every sample). Where the page really
        was is recorded in ``extras["home_node"]``.""", public="str")
    #: the sampling plan (derived; set by :meth:`request`)
    plan: SamplingPlan | None = dataclasses.field(default=None, repr=False, compare=False)
    #: True once :meth:`resolve` has read ``cpus`` and ``home`` on this machine
    resolved: bool = dataclasses.field(default=False, repr=False, compare=False)
    #: how the CPUs were chosen (set by :meth:`resolve`): ``{"selector": the text given for
    #: ``cpus`` (None for a list or the default), "of": the CPUs this process could use}``
    selection: dict[str, Any] | None = dataclasses.field(default=None, repr=False, compare=False)
    #: the sizes asked for, as a result's ``metadata["parameters"]`` records them (set by
    #: :meth:`request`, with the plan: recorded where they are checked)
    parameters: dict[str, Any] | None = dataclasses.field(default=None, repr=False, compare=False)

    @classmethod
    def request(cls, cpus: CPUs = None, **keywords: Any) -> SweepOptions:
        """Check the options that do not depend on the machine; ``cpus`` and ``home`` are kept as
        given (their form is checked). Raises InputError as :func:`corelat.measure` does."""
        opts = cls(cpus, **keywords)
        if isinstance(cpus, str) and _selectors.is_selection(cpus):
            _selectors.parse(cpus)  # its grammar, before a fleet starts: the words are read per node
        kernel, round_trips, samples, warmup, timeout = check_params(
            opts.kernel, opts.round_trips, opts.samples, opts.warmup, opts.timeout)
        plan = check_sampling(samples, opts.precision, opts.max_samples, opts.max_time_per_pair)
        opts._check_layout()
        parameters = {"round_trips": round_trips, **sampling_parameters(plan), "warmup": warmup,
                      "timeout": timeout}
        return dataclasses.replace(opts, kernel=kernel, round_trips=round_trips, samples=samples,
                                   warmup=warmup, timeout=timeout, plan=plan, home=parse_home(opts.home),
                                   budget=check_budget(opts.budget), parameters=parameters)

    def _check_layout(self):
        check_order(self.order, allowed=RESULT_ORDERS)
        if self.strategy not in STRATEGIES:
            raise InputError(f"unknown strategy {self.strategy!r}; use one of: {', '.join(STRATEGIES)}")
        if (self.partition is not None or self.topology is not None) and self.strategy != "sample":
            raise InputError("partition and topology are used by strategy='sample' only")
        check_topology(self.topology)
        if self.partition is not None and self.topology is not None:
            raise InputError("give either a partition or a topology, not both")
        retest_limit(self.retest, 0)
        check_budget(self.budget)

    def resolve(self, cpus: Sequence[int] | None = None) -> SweepOptions:
        """These options on this machine: ``cpus`` read (or the given, already checked ``cpus``)
        and ``home`` checked against them (a node that exists, a third CPU not among them)."""
        chosen = tuple(resolve_cpus(self.cpus)) if cpus is None else tuple(cpus)
        home = check_home(self.home, chosen, self.kernel)
        return dataclasses.replace(self, cpus=chosen, home=home, resolved=True,
                                   selection=self._selection())

    def _selection(self) -> dict[str, Any]:
        """What :attr:`selection` records: the selector as written (kept when resolved again)."""
        if isinstance(self.cpus, str):
            selector: str | None = self.cpus
        else:
            selector = (self.selection or {}).get("selector")
        # of: what the selection chose from (no affinity to read off Linux, where nothing is measured)
        of = list(allowed_cpus()) if hasattr(os, "sched_getaffinity") else None
        return {"selector": selector, "of": of}

    @classmethod
    def build(cls, cpus: CPUs = None, **keywords: Any) -> SweepOptions:
        """:meth:`request` and :meth:`resolve` in one: the options of a sweep on this machine."""
        return cls.request(cpus, **keywords).resolve()

    @classmethod
    def for_smt(cls, cpus: CPUs = None, *, kernel: str = "cas", kernels: Sequence[str] = ("cas", "rw"),
                topology: Any = None, **keywords: Any) -> SweepOptions:
        """The options of :func:`corelat.smt`: a ping-pong ``kernel`` among ``kernels``, ``topology``
        a :class:`~corelat.Topology` to take siblings from (resolved by smt, which reads
        ``cpus`` against it)."""
        if not isinstance(kernel, str) or kernel not in kernels:
            raise InputError(f"unknown kernel {kernel!r} for smt; choose one of: {', '.join(kernels)}")
        opts = cls.request(cpus, kernel=kernel, **keywords)
        return dataclasses.replace(opts, topology=check_topology(topology, records=False))


def keywords() -> tuple[dataclasses.Field, ...]:
    """The fields of :class:`SweepOptions` that are the sweep's keywords, in their order."""
    return tuple(f for f in dataclasses.fields(SweepOptions) if "doc" in f.metadata)


_F = TypeVar("_F", bound=Callable[..., Any])

#: A numpydoc section's header: its title, underlined.
_HEADER = re.compile(r"^([A-Z][A-Za-z ]*)\n-+\n", re.MULTILINE)


def _split_parameters(doc):
    """A cleaned numpydoc docstring as (what comes before its Parameters section, the section's
    entries by name, what comes after); with no such section, the entries are empty and the section
    goes before the first other one."""
    headers = list(_HEADER.finditer(doc))
    section = next((m for m in headers if m.group(1) == "Parameters"), None)
    if section is None:
        at = headers[0].start() if headers else len(doc)
        return doc[:at], {}, doc[at:]
    end = next((m.start() for m in headers if m.start() > section.start()), len(doc))
    body = doc[section.end():end].strip("\n")
    entries = {}
    for entry in re.split(r"\n(?=\S)", body) if body else ():  # an entry's first line is not indented
        entries[entry.split("\n", 1)[0].split(" :", 1)[0].strip()] = entry.rstrip()
    return doc[:section.start()], entries, doc[end:]


def _entry(field):
    """The Parameters entry of a sweep keyword, from its field."""
    shown = field.metadata["shown"] or field.metadata["public"] or field.type
    return f"{field.name} : {shown}\n" + textwrap.indent(field.metadata["doc"], "    ")


def _refuse(name, unknown, refused):
    if refused is None:  # Python's own words, as for any function
        raise TypeError(f"{name}() got an unexpected keyword argument {unknown[0]!r}")
    for k in unknown:
        if k in refused:
            raise InputTypeError(refused[k])
    raise InputTypeError(f"{name}() takes no {', '.join(map(repr, unknown))}")


def sweep_keywords(*, omit: Sequence[str] = (),
                   refused: Mapping[str, str] | None = None) -> Callable[[_F], _F]:
    """Decorate a function that sweeps, ``def f(<its own parameters>, **options)``, so that it takes
    the keywords of :class:`SweepOptions` (but those in ``omit``) in ``options`` and shows them.

    The function writes its own parameters, and a sweep keyword where it takes it otherwise (by
    position, or a narrower type), with the field's default; it documents in its Parameters section
    its own parameters, and a sweep keyword only where it means more there. The signature that
    ``help()`` and :func:`inspect.signature` show is the function's own parameters then the sweep
    keywords, keyword-only, in the fields' order; the Parameters section is the function's entries
    and the fields' documentation, in that order. A keyword that is none of them is refused as
    Python refuses it (a TypeError), or, where ``refused`` is given, as an
    :class:`~corelat._core.errors.InputTypeError` (corelat's error, said before anything is
    measured), with the reason ``refused`` gives for a keyword the function sets itself.
    """

    def decorate(fn):
        fields = {f.name: f for f in keywords() if f.name not in omit}
        own = inspect.signature(fn)
        written = [p for p in own.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
        for p in written:
            if p.name in fields and p.default != fields[p.name].default:
                raise TypeError(f"{fn.__name__}({p.name}={p.default!r}): SweepOptions's default is "
                                f"{fields[p.name].default!r}")
        named = {p.name: p for p in written}
        positional = [p for p in written if p.kind is not inspect.Parameter.KEYWORD_ONLY]
        sweep = [named.get(name) or inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=f.default,
                                                      annotation=f.metadata["public"] or f.type)
                 for name, f in fields.items() if name not in {p.name for p in positional}]
        params = positional + [p for p in written if p not in positional + sweep] + sweep
        signature = own.replace(parameters=params)
        before, entries, after = _split_parameters(inspect.cleandoc(fn.__doc__ or ""))
        documented = [entries.pop(p.name) if p.name in entries else _entry(fields[p.name])
                      for p in params if p.name in entries or p.name in fields]
        section = "\n".join(documented + list(entries.values()))  # one that is no parameter: kept, to be seen
        doc = f"{before}Parameters\n----------\n{section}\n\n{after}"
        takes = {p.name for p in params}

        @functools.wraps(fn)
        def sweeping(*args, **kwargs):
            unknown = [k for k in kwargs if k not in takes]
            if unknown:
                _refuse(fn.__name__, unknown, refused)
            return fn(*args, **kwargs)

        sweeping.__signature__ = signature
        sweeping.__doc__ = doc
        sweeping.__annotations__ = {**{p.name: p.annotation for p in params if p.annotation is not p.empty},
                                    "return": own.return_annotation}
        return sweeping

    return decorate


__all__ = ["SweepOptions", "check_budget", "keywords", "retest_limit", "sweep_keywords"]
