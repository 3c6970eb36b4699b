"""One bag of options for every sweep: :class:`SweepOptions`, validated once, here.

:func:`corelat.measure`, :func:`corelat.smt`, :func:`corelat.placement`,
:func:`corelat.measure_fleet` and their commands take the same keywords; each builds one
:class:`SweepOptions` from them and hands it to the sweep engine. The public functions keep their
explicit, documented keywords, and every keyword they share maps onto the field of the same name
(``tests/test_signatures.py`` checks it).

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
from collections.abc import Sequence
from typing import Any

import numpy as np

from corelat._core.errors import InputError, InputTypeError
from corelat._core.types import RESULT_ORDERS, CPUs, Progress
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


@dataclasses.dataclass(frozen=True)
class SweepOptions:
    """What a sweep needs, checked: the CPUs, the kernel and its sizes, the sampling plan, the
    budgets, the home of the line, the re-tests, the order, the name, the strategy and progress.

    Make one with :meth:`build` (or :meth:`request` then :meth:`resolve`); the constructor itself
    checks nothing. The fields are the keywords of :func:`corelat.measure`, normalised
    (``warmup`` is an integer, ``home`` a :class:`~corelat._system.home.Home`, ``cpus`` a tuple
    once resolved); ``plan`` is the :class:`~corelat._system.validate.SamplingPlan` that
    ``samples``, ``precision``, ``max_samples`` and ``max_time_per_pair`` make.
    """

    cpus: CPUs = None
    kernel: str = "cas"
    round_trips: int = 1000
    samples: int | None = None
    precision: float = DEFAULT_PRECISION
    max_samples: int = DEFAULT_MAX_SAMPLES
    max_time_per_pair: float = DEFAULT_MAX_TIME_PER_PAIR
    warmup: int | None = None
    timeout: float = DEFAULT_TIMEOUT
    progress: Progress = False
    order: str | None = None
    name: str | None = None
    strategy: str = "full"
    partition: Sequence[Sequence[int]] | None = None
    topology: Any = None
    retest: bool | int = True
    home: Any = "initiator"
    #: the sampling plan (derived; set by :meth:`request`)
    plan: SamplingPlan | None = dataclasses.field(default=None, repr=False, compare=False)
    #: True once :meth:`resolve` has read ``cpus`` and ``home`` on this machine
    resolved: bool = dataclasses.field(default=False, repr=False, compare=False)
    #: how the CPUs were chosen (set by :meth:`resolve`): ``{"selector": the text given for
    #: ``cpus`` (None for a list or the default), "of": the CPUs this process could use}``
    selection: dict[str, Any] | None = dataclasses.field(default=None, repr=False, compare=False)

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
        return dataclasses.replace(opts, kernel=kernel, round_trips=round_trips, samples=samples,
                                   warmup=warmup, timeout=timeout, plan=plan, home=parse_home(opts.home))

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


def option_names(fn) -> list[str]:
    """The keywords of ``fn`` that are :class:`SweepOptions` fields."""
    fields = {f.name for f in dataclasses.fields(SweepOptions)}
    return [name for name in inspect.signature(fn).parameters if name in fields]


def refuse_unknown_keywords(refused=None):
    """Decorate a public measuring function so that a keyword it does not take raises
    :class:`~corelat._core.errors.InputTypeError` (corelat's error, said before anything is
    measured) rather than Python's TypeError; ``refused`` maps such keywords to the reason."""
    refused = dict(refused or {})

    def decorate(fn):
        params = inspect.signature(fn).parameters

        @functools.wraps(fn)
        def checked(*args, **kwargs):
            unknown = [k for k in kwargs
                       if k not in params or params[k].kind is inspect.Parameter.POSITIONAL_ONLY]
            for k in unknown:
                if k in refused:
                    raise InputTypeError(refused[k])
            if unknown:
                raise InputTypeError(f"{fn.__name__}() takes no {', '.join(map(repr, unknown))}")
            return fn(*args, **kwargs)

        return checked

    return decorate


__all__ = ["SweepOptions", "option_names", "refuse_unknown_keywords", "retest_limit"]
