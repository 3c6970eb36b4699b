# Lint (ruff) and the import contracts of docs/architecture.md (import-linter, [tool.importlinter] in
# pyproject.toml: the layers, the independence of _measure and _analysis, no import circle), read
# from the source tree.
"$venv/bin/python" -m pip install -q ruff import-linter
"$venv/bin/ruff" check corelat tests benchmarks
PYTHONPATH="$repo" "$venv/bin/lint-imports"
