# Fleets over MPI (issue 12): mpi4py (the corelat[mpi] extra) and the mpich wheel from PyPI, the
# mpiexec -n 3 tests, a real three-rank run (one node name per rank) and the fleet notebook on its
# output. The run's report is kept in $artefacts/fleet/ (the README's "Many machines" report).
t_fleet=$SECONDS
mpi_extra=$("$venv/bin/python" -c 'import tomllib; print(" ".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["mpi"]))')
# shellcheck disable=SC2086
"$venv/bin/python" -m pip install -q $mpi_extra mpich
echo "mpi4py + mpich installed in $((SECONDS - t_fleet)) s: $("$venv/bin/python" -c 'from mpi4py import MPI; print(MPI.Get_library_version().splitlines()[0])')"

(cd /tmp && CORELAT_REQUIRE_MPI=1 CORELAT_TEST_INSTALLED=1 CORELAT_SHARED="$shared" \
  "$venv/bin/python" -m pytest -c "$repo/pyproject.toml" --rootdir "$repo" "$repo/tests/test_fleet_mpi.py" "$repo/tests/test_mpi_abort.py")

fleet_dir="$artefacts/fleet"
rm -rf "$fleet_dir"
mkdir -p "$fleet_dir"
ranks=()
for node in node01 node02 node03; do
  [ ${#ranks[@]} -gt 0 ] && ranks+=(:)
  ranks+=(-n 1 env "CORELAT_NODE_NAME=$node" "$venv/bin/corelat" fleet 200 50 --timeout 20 -o "$fleet_dir/run")
done
# Exit 3 is outliers only (three node names on one shared CI machine can differ): a verdict, not a failure.
fleet_rc=0
timeout 600 "$venv/bin/mpiexec" "${ranks[@]}" > "$fleet_dir/report.txt" || fleet_rc=$?
cat "$fleet_dir/report.txt"
[ "$fleet_rc" = 0 ] || [ "$fleet_rc" = 3 ] || { echo "corelat fleet: exit $fleet_rc"; exit 1; }
report_rc=0
"$venv/bin/corelat" fleet-report "$fleet_dir/run" --expect 'node[01-03]' --prometheus "$fleet_dir/corelat.prom" \
  > /dev/null || report_rc=$?
[ "$report_rc" = 0 ] || [ "$report_rc" = 3 ] || { echo "corelat fleet-report: exit $report_rc"; exit 1; }
grep -q '^corelat_fleet_exit_status ' "$fleet_dir/corelat.prom"
"$venv/bin/corelat" report "$fleet_dir/run/fleet.json" | grep -q "Fleet run: 3 nodes in 1 group"  # corelat.load reads it

"$venv/bin/python" -m pip install -q "papermill>=2.4"
(cd "$fleet_dir" && JUPYTER_PLATFORM_DIRS=1 "$venv/bin/papermill" --no-progress-bar --cwd . \
  "$repo/notebooks/fleet.ipynb" fleet.ipynb -p FLEET_DIR "$fleet_dir/run" -y "EXPECT: 'node[01-03]'")
grep -q "Fleet run: 3 nodes in 1 group" "$fleet_dir/fleet.ipynb"
echo "fleet step: $((SECONDS - t_fleet)) s"
