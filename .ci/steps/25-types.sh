# Types: mypy on corelat/ (configuration in pyproject.toml, [tool.mypy]). The package ships py.typed.
"$venv/bin/python" -m pip install -q mypy prometheus_client
"$venv/bin/python" -m mypy corelat
