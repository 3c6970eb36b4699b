"""No module of the package grows past MAX_LINES unless pyproject.toml names it, with a reason, in
[tool.corelat.module-size]: a long module is a sign it holds several things (the "Size" issue)."""

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 600


def _exemptions():
    """{path: reason} from pyproject.toml's [tool.corelat.module-size] table (empty when there is none)."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        try:
            import tomli as tomllib
        except ImportError:  # 3.9/3.10 without tomli: the table is flat "path" = "reason" lines
            return _exemptions_by_hand(text)
    return dict(tomllib.loads(text).get("tool", {}).get("corelat", {}).get("module-size", {}))


def _exemptions_by_hand(text):
    m = re.search(r"^\[tool\.corelat\.module-size\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    if not m:
        return {}
    return dict(re.findall(r'^\s*"([^"]+)"\s*=\s*"([^"]*)"', m.group(1), re.M))


def test_no_module_over_the_limit_unless_named_with_a_reason():
    exempt = _exemptions()
    assert all(reason.strip() for reason in exempt.values()), "every exemption gives its reason"
    modules = sorted((ROOT / "corelat").rglob("*.py"))
    if not modules:
        pytest.skip("no source tree next to the tests")
    long = {}
    for path in modules:
        rel = path.relative_to(ROOT).as_posix()
        with path.open(encoding="utf-8") as f:
            n = sum(1 for _ in f)
        if n > MAX_LINES and rel not in exempt:
            long[rel] = n
    assert not long, f"modules over {MAX_LINES} lines (split them, or name them in pyproject.toml): {long}"


def test_exemptions_name_modules_that_exist():
    stale = [p for p in _exemptions() if not (ROOT / p).is_file()]
    assert not stale, f"[tool.corelat.module-size] names missing modules: {stale}"


def test_the_table_reads_the_same_by_hand():
    text = '[tool.x]\na = 1\n[tool.corelat.module-size]\n"corelat/a.py" = "one value, many words"\n[tool.y]\n'
    assert _exemptions_by_hand(text) == {"corelat/a.py": "one value, many words"}
