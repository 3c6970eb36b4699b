"""The words on a figure: what a cell holds, sample counts, percentiles, log-axis tick labels."""

from __future__ import annotations

from corelat._core.text import counts as fmt_counts


def _value_label(result, statistic):
    """What a cell shows, for colour bars and titles: the quantity in ns and the statistic per pair.
    Imported files hold one value per pair: name the statistic the file records, not ``statistic``."""
    chase = result.kernel in ("read-clean", "read-modified")
    what = "cost of one load (ns)" if chase else "one-way latency (ns)"
    return f"{what}, {_statistic_words(result, statistic)}"


def _statistic_words(result, statistic):
    if not result.value_only:
        return f"{statistic} per pair"
    recorded = result.metadata.get("statistic")
    if recorded:
        return f"{recorded} per pair, as the file records it"
    return "one value per pair (the file does not say which statistic)"


def _who(result):
    """Who a title names: the CPU model (a measured result's name is the host's, which tells a
    reader little), with a name the user gave beside it; the name where no model is recorded."""
    model = result.metadata.get("cpu_model")
    name = result.name
    if not model:
        return name or "result"
    if not name or name == result.metadata.get("hostname") or name == model:
        return str(model)
    return f"{name} ({model})"


def _count_text(counts):
    """How many samples each drawn pair has (they differ in precision-driven sweeps)."""

    text = fmt_counts(counts)
    return f"{text} sample{'' if text == '1' else 's'} per pair"


def _pct(p):
    return f"{p:g}th percentile" if p not in (0, 100) else ("minimum" if p == 0 else "maximum")


def _short(v):
    """Tick label of a log axis in ns: 20, 500, 2k, 50k."""
    if v >= 1000:
        return f"{v / 1000:g}k"
    return f"{v:g}"
