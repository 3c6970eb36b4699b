"""What the command line says agrees with itself: counts of one thing, a ± that belongs to the
statistic shown, the precision the data has, the kernel a file really records, and the command
line's own words (issue 10's "counts and words")."""

import argparse
import re

import numpy as np
import pytest

import corelat
from corelat import LatencyResult
from corelat._core import text as _text
from corelat._core.text import counts as fmt_counts
from corelat._core.text import value_err as fmt_value
from corelat._results.latency import PairFlag
from corelat.cli import _parser, cmd_measure, cmd_report, common, main

PEERS = "fixtures/peer-results/core-to-core-latency"


def result(counts=(300, 300, 300), k=300, kernel="cas", symmetric=True, spread=0.03, **md):
    """3 CPUs; pair p keeps counts[p] samples (NaN after); precision-driven metadata."""
    rng = np.random.default_rng(0)
    n = 3
    s = np.full((n, n, k), np.nan)
    pairs = [(1, 0), (2, 0), (2, 1)]
    for (i, j), c in zip(pairs, counts):
        s[i, j, :c] = 30 * (1 + spread * rng.standard_normal(c))
        s[j, i, :c] = s[i, j, :c] if symmetric else 35 * (1 + spread * rng.standard_normal(c))
    flags = np.where(np.eye(n, dtype=bool), 0, PairFlag.MEASURED)
    if symmetric:
        flags[np.triu_indices(n, 1)] = PairFlag.MIRRORED
    meta = {"symmetric": symmetric, "parameters": {"round_trips": 1000, "samples": k, "precision": 0.02,
                                                   "max_time_per_pair": 0.2},
            "sampling": {"mode": "precision", "samples_taken": 2 * sum(counts)}, **md}
    return LatencyResult(cpus=range(n), kernel=kernel, samples=s, flags=flags, metadata=meta, name="r")


def test_header_counts_samples_per_pair_not_a_sweep_total():
    text = cmd_measure.header_text(result(counts=(98, 104, 106), k=120), "median")
    line = next(x for x in text.splitlines() if x.startswith("Num samples:"))
    assert line.startswith("Num samples: 98-106 (median 104) per pair, sampled until the median is within "
                           "±2.0%")
    assert "taken" not in line  # the sweep total (first attempts included) is not a per-pair count
    report = cmd_report.report_text(result(counts=(98, 104, 106), k=120), corelat.structure(result()))
    assert "Samples: 98-106 (median 104) per pair" in report and "up to 120" not in report
    assert fmt_counts([300, 300]) == "300"


def test_plus_minus_belongs_to_the_statistic_shown():
    r = result()
    assert "±" not in _text.latency_summary(r, "min")
    assert "no ±" in common.showing_text(r, "min")
    assert r.summary(statistic="min")["min"]["err"] is None
    assert r.summary(statistic="max")["max"]["err"] is None
    mean = r.summary(statistic="mean")["min"]
    assert mean["err"] == pytest.approx(float(r.sem[mean["cpus"]]))
    assert ("±" in _text.latency_summary(r, "median")
            and "95% confidence interval" in common.showing_text(r, "median"))
    assert "standard error" in common.showing_text(r, "mean")
    assert "±" not in _text.matrix(r, "min")


@pytest.mark.parametrize("v, err, text", [
    (30.2, 0.04, "30.20±0.04"), (38.0, 6.0, "38±6"), (8.43, 0.6, "8.4±0.6"), (250.0, 12.0, "250±12"),
    (30.2, 0.0, "30.2±<0.1"), (107.0, 0.5, "107.0±0.5"), (5.2, None, "5.2"), (30.0, 0.096, "30.0±0.1"),
])
def test_values_carry_the_precision_the_data_has(v, err, text):
    assert fmt_value(v, err) == text


def test_tight_matrix_never_shows_a_zero_width():
    r = result(spread=0.0005)  # CI half-width about 0.002 ns
    cells = _text.matrix(r).split()
    assert not any(c.endswith(("±0.0", "±0")) for c in cells), cells
    assert any("±0.00" in c for c in cells), cells


def test_report_says_what_the_one_way_kernel_measures():
    r = result(kernel="oneway", symmetric=False)
    text = cmd_report.report_text(r, corelat.structure(r))
    assert "receiver's timer at arrival - sender's timer at sending" in text
    assert "round-trip" not in text


def test_imported_csv_kernel_is_unknown(shared_dir, capsys):
    path = shared_dir / PEERS / "AMD Ryzen 9 7950X.csv"
    assert corelat.load(path).kernel == "unknown"
    assert main(["report", str(path)]) == 0
    out = capsys.readouterr().out
    assert "kernel unknown (imported core-to-core-latency csv, which does not record it)" in out
    assert "kernel cas" not in out


def test_retest_takes_a_number_of_pairs_on_the_command_line():
    p = _parser("measure", cmd_measure)
    assert p.parse_args([]).retest is True
    assert p.parse_args(["--retest"]).retest is True
    assert p.parse_args(["--retest=5"]).retest == 5
    assert p.parse_args(["--no-retest"]).retest is False
    assert p.parse_args(["1000", "300", "--retest=2"]).round_trips == 1000
    with pytest.raises(Exception, match="--retest=5"):  # the value after a space: ambiguous (issue 24)
        p.parse_args(["--retest", "5"])
    with pytest.raises((SystemExit, Exception)):
        p.parse_args(["--retest", "-1"])
    assert isinstance(cmd_measure._retest_count("3"), int)
    with pytest.raises(argparse.ArgumentTypeError):
        cmd_measure._retest_count("many")


def test_warnings_in_cli_words_with_a_shared_cause_said_once(capsys):
    from corelat._measure import quality as _quality

    f = np.full((3, 3), PairFlag.MEASURED, np.uint32)
    np.fill_diagonal(f, 0)
    f[1, 0] |= PairFlag.BIMODAL | PairFlag.RETESTED
    f[2, 0] |= PairFlag.UNSTABLE | PairFlag.TARGET_NOT_MET
    w, _ = _quality.sweep_warnings(f, (0, 1, 2), precision=0.02, max_time_per_pair=0.2, retested=1)
    w.append("1 more unstable CPU pair was not re-measured "
             "(retest limit 1; pass retest=N to re-measure more)")
    r = result(warnings=w, warning_cause=_quality.shared_cause(f, "KVM"))
    cmd_measure.print_warnings(r)
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert lines[0] == ("WARNING: this result may be unreliable (running under KVM: the host moves vCPUs "
                        "between its cores, which makes pairs bimodal or unstable)")
    assert err.count("KVM") == 1 and len(lines) == 1 + len(w)
    assert "--retest N" in err and "corelat report FILE --pairs" in err and "--max-time-per-pair" in err
    for python in ("retest=", "result.extras", "max_time_per_pair", "corelat.check()"):
        assert python not in err
    assert "retest=N" in "\n".join(r.warnings)  # the Python API keeps its own words


def test_report_pairs_lists_both_attempts(tmp_path, capsys):
    r = result()
    flags = np.array(r.flags)
    flags[1, 0] |= PairFlag.RETESTED
    first = np.full(r.samples.shape, np.nan)
    first[1, 0, :50] = 90.0 + np.arange(50) * 0.01
    first_flags = np.zeros_like(flags)
    first_flags[1, 0] = PairFlag.MEASURED | PairFlag.BIMODAL
    r = LatencyResult(cpus=r.cpus, kernel=r.kernel, samples=r.samples, flags=flags, metadata=dict(r.metadata),
                      name="r", extras={"first_attempt": first, "first_flags": first_flags})
    r.save(tmp_path / "r.npz")
    assert main(["report", str(tmp_path / "r.npz"), "--pairs"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.strip().startswith("1-0:"))
    assert "re-tested" in line and "(300 samples)" in line
    assert re.search(r"first attempt 90\.2\d±0\.\d+ ns \(50 samples, bimodal\)", line), line
    assert main(["report", str(tmp_path / "r.npz")]) == 0
    assert "first attempt" not in capsys.readouterr().out


@pytest.mark.hw
@pytest.mark.skipif(len(corelat.allowed_cpus()) < 2, reason="needs at least 2 allowed CPUs")
def test_one_way_sweep_says_whether_directions_exceed_the_timer_offset():
    try:
        r = corelat.measure(corelat.allowed_cpus()[:2], kernel="oneway", round_trips=20, samples=10)
    except corelat.MeasurementError as e:  # timers out of step here: nothing to compare
        pytest.skip(f"one-way kernel refused: {e}")
    note = [n for n in r.notes if "offset-free (a→b + b→a) / 2" in n]
    assert len(note) == 1 and "timer offset within ±" in note[0]
