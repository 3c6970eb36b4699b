"""corelat verify measures this machine within --budget (issue 36): a prolog's default, or the given one."""
import argparse

from corelat.cli import cmd_verify


def _args(argv):
    p = argparse.ArgumentParser()
    cmd_verify.add_arguments(p)
    return p.parse_args(argv)


def test_verify_measures_within_its_default_budget():
    args = _args(["--against", "ref.npz"])
    assert cmd_verify.measure_options(_Ref(), args)["budget"] == cmd_verify.DEFAULT_BUDGET


def test_verify_measures_within_the_budget_given():
    args = _args(["--against", "ref.npz", "--budget", "7.5"])
    assert cmd_verify.measure_options(_Ref(), args)["budget"] == 7.5


class _Ref:
    kernel = "cas"
