# The documentation (issue 16, docs/): API reference, user guide (the README), the notebooks executed
# with their outputs, the CLI reference from argparse; Sphinx with warnings as errors, built against
# the wheel 70-wheels made (installed in a fresh venv). The HTML is kept in $artefacts/docs.
pyx=$(/usr/bin/python3 -c 'import sys; print(f"{sys.version_info[0]}{sys.version_info[1]}")')
dv=$repo/build/venv-docs
rm -rf "$dv"
/usr/bin/python3 -m venv "$dv"
whl=$(ls dist/corelat-*-cp$pyx-cp$pyx-manylinux*_x86_64.whl)
"$dv/bin/python" -m pip install -q "$whl[docs]"
make -s docs PY="$dv/bin/python"
# The docs tier (the API reference's numpydoc, built as text with warnings as errors), here only.
(cd /tmp && CORELAT_TEST_INSTALLED=1 "$venv/bin/python" -m pytest -p no:cacheprovider -c "$repo/pyproject.toml" \
  --rootdir "$repo" -q -m docs "$repo/tests")
rm -rf "$artefacts/docs" && cp -r docs/_build/html "$artefacts/docs"
