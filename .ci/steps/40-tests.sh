# Tests against the installed package, from outside the source tree (the README's step 2).
export CORELAT_TEST_INSTALLED=1 CORELAT_SHARED="$shared"
(cd /tmp && "$venv/bin/python" -m pytest -c "$repo/pyproject.toml" --rootdir "$repo" "$repo/tests")
