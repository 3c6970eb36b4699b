# The reports as a person sees them (issue 21): every kind of HTML report rendered by Debian's
# headless Chromium (00-system installs it, and poppler-utils for the PDF): screenshots not blank,
# the DOM after the scripts ran holding the sections and hover values, no console message, no web
# address, Chromium in an empty network namespace. The tests skip without a browser; CI has one,
# so a skip here is a failure. A peer file's HTML and PDF reports are kept as artefacts
# (benchmarks/report.py --quick runs in 50-benchmarks with the others).
command -v chromium >/dev/null || { echo "chromium not installed (00-system)" >&2; exit 1; }
command -v pdfinfo >/dev/null || { echo "pdfinfo not installed (00-system: poppler-utils)" >&2; exit 1; }
(cd /tmp && CORELAT_SHARED="$shared" "$venv/bin/pytest" -c "$repo/pyproject.toml" --rootdir "$repo" \
  -p no:cacheprovider -q -m browser -rs "$repo/tests/test_report_browser.py" -n 2 | tee "$artefacts/report-tests.txt")
if grep -q "SKIPPED" "$artefacts/report-tests.txt"; then
  echo "a browser test was skipped in CI" >&2
  exit 1
fi
mkdir -p "$artefacts/reports"
"$venv/bin/corelat" report "$shared/fixtures/peer-results/core-to-core-latency/Dual Intel(R) Xeon Gold 6242 @ 2.8GHz.csv" \
  --html "$artefacts/reports/xeon-gold-6242.html" --pdf "$artefacts/reports/xeon-gold-6242.pdf"
