# Every script in benchmarks/ runs in its quick mode against the installed package, from an empty
# folder (so nothing imports the checkout by accident): seconds each, figures not judged, so no
# benchmark can rot unnoticed. Then the campaign tier of the tests (hundreds of runs of the installed
# command: hostile files, signals, exit times), from an empty folder too.
bench_dir=$(mktemp -d)
for script in "$repo"/benchmarks/*.py; do
  echo "-- $(basename "$script") --quick"
  (cd "$bench_dir" && timeout 300 "$venv/bin/python" "$script" --quick > "$bench_dir/$(basename "$script").txt") || {
    cat "$bench_dir/$(basename "$script").txt"; echo "benchmark $script failed"; exit 1; }
  tail -n 3 "$bench_dir/$(basename "$script").txt"
done
rm -rf "$bench_dir"
echo "-- the campaign tier (tests/test_reliability.py, test_exit_time.py, test_analysis_interrupt.py)"
(cd /tmp && CORELAT_TEST_INSTALLED=1 CORELAT_SHARED="$shared" "$venv/bin/python" -m pytest -p no:cacheprovider \
  -c "$repo/pyproject.toml" --rootdir "$repo" -m campaign -q "$repo/tests/test_reliability.py" \
  "$repo/tests/test_exit_time.py" "$repo/tests/test_analysis_interrupt.py")
