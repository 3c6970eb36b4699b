# Notebooks on real machines' files (papermill sets the parameters cell): compare_machines on two
# machines (the 5950X and the 7950X), measure_and_explore on one. The executed copies, outputs and
# figures included, are kept in $artefacts/notebooks so the comparison its title promises can be seen.
# (tests/test_notebooks.py runs every notebook with its defaults, the shipped examples, in 30-tests;
# its test of compare_machines on these two files is this run's twin, left out there.)
"$venv/bin/python" -m pip install -q "papermill>=2.4"
peers="$shared/fixtures/peer-results/core-to-core-latency"
if [ ! -d "$peers" ]; then
  echo "peer results not found at $peers: cannot run the notebooks on real machines' files" >&2
  exit 1
fi
mkdir -p "$artefacts/notebooks"
export JUPYTER_PLATFORM_DIRS=1
(cd "$artefacts/notebooks" &&
  "$venv/bin/papermill" --no-progress-bar --cwd . "$repo/notebooks/compare_machines.ipynb" \
    compare_machines-5950X-7950X.ipynb \
    -y "FILES: ['$peers/AMD Ryzen 9 5950X @ 3.40 GHz.csv', '$peers/AMD Ryzen 9 7950X.csv']" &&
  "$venv/bin/papermill" --no-progress-bar --cwd . "$repo/notebooks/measure_and_explore.ipynb" \
    measure_and_explore-7950X.ipynb -y "RESULT_FILE: '$peers/AMD Ryzen 9 7950X.csv'")
# papermill stops on a cell's error; also check that both machines are in the table and drawn.
"$venv/bin/python" - "$artefacts/notebooks" <<'PY'
import pathlib, sys
import nbformat
folder = pathlib.Path(sys.argv[1])
nb = nbformat.read(folder / "compare_machines-5950X-7950X.ipynb", as_version=4)
outs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
text = "".join(o.get("text", "") for o in outs)
assert "AMD Ryzen 9 5950X" in text and "AMD Ryzen 9 7950X" in text, "a machine is missing from the table"
assert "not machines" not in text, "two machines' files read as one machine"
assert any("image/png" in o.get("data", {}) for o in outs), "no heatmap drawn"
print("notebooks on real machines' files: ok ->", sorted(p.name for p in folder.glob("*.ipynb")))
PY
