"""One coherent public API: the same words and defaults across measure, smt and locks, and no test
switches in production code."""

import ast
import pathlib

import corelat


def _sources():
    root = pathlib.Path(corelat.__file__).parent
    return sorted(root.rglob("*.py"))


def test_no_corelat_test_setting_is_read_by_production_code():
    # Test stand-ins live in tests/ (tests/partner_cli.py); the package reads no CORELAT_TEST_*
    # variable, whatever the spelling of the read (os.environ[...], .get, os.getenv).
    found = []
    for f in _sources():
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and "CORELAT_TEST" in node.value:
                found.append(f"{f.name}:{node.lineno}")
    assert not found, f"CORELAT_TEST settings in production code: {found}"
