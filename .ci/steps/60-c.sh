# Wait for the C checks 26-c-start started (.ci/c-checks.sh: warnings on x86-64 and aarch64, ASan/UBSan,
# TSan, valgrind, the aarch64 selftest under qemu-user, musl) and show what they printed. The wait is
# bounded (each selftest run is too, in the Makefile): checks that hang fail CI with what they printed,
# never use up CI's 90 minutes.
c_limit=${CORELAT_C_CHECKS_LIMIT:-1500}   # seconds since they started; they take ~400
if [ -z "${c_pid:-}" ]; then  # CORELAT_CI_ONLY=60: run them here
  timeout "$c_limit" bash -euo pipefail -c 'source .ci/c-checks.sh'
else
  while kill -0 "$c_pid" 2>/dev/null && [ $((SECONDS - c_started)) -lt "$c_limit" ]; do sleep 2; done
  if kill -0 "$c_pid" 2>/dev/null; then
    kill -- -"$c_pid" 2>/dev/null || true
    cat "$c_log"
    echo "the C checks were still running ${c_limit} s after they started: ended (see above for the last step)" >&2
    exit 1
  fi
  c_rc=0
  wait "$c_pid" || c_rc=$?
  cat "$c_log"
  echo "-- C checks: exit $c_rc, $((SECONDS - c_started)) s since they started"
  [ "$c_rc" -eq 0 ] || { echo "the C checks failed (exit $c_rc)" >&2; exit 1; }
fi
