# Every script in benchmarks/ runs in its quick mode against the installed package, from an empty
# folder (so nothing imports the checkout by accident): seconds each, figures not judged, so no
# benchmark can rot unnoticed.
bench_dir=$(mktemp -d)
for script in "$repo"/benchmarks/*.py; do
  echo "-- $(basename "$script") --quick"
  (cd "$bench_dir" && timeout 300 "$venv/bin/python" "$script" --quick > "$bench_dir/$(basename "$script").txt") || {
    cat "$bench_dir/$(basename "$script").txt"; echo "benchmark $script failed"; exit 1; }
  tail -n 3 "$bench_dir/$(basename "$script").txt"
done
rm -rf "$bench_dir"
