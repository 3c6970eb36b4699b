# Start the C checks (.ci/c-checks.sh) in the background; 60-c waits for them and shows their output.
# They need nothing the next steps make, and keep one or two CPUs busy for minutes while those run.
# Their own session (setsid), so that .ci/run can end all of them if CI stops early.
c_log=$artefacts/c-checks.log
(cd "$repo" && exec setsid bash -euo pipefail -c 'source .ci/c-checks.sh') >"$c_log" 2>&1 &
c_pid=$!
c_started=$SECONDS
echo "C checks started in the background (pid $c_pid, output in $c_log)"
