# Lint (ruff).
"$venv/bin/python" -m pip install -q ruff
"$venv/bin/ruff" check corelat tests benchmarks
