# Wait for the C checks 26-c-start started (.ci/c-checks.sh: warnings on x86-64 and aarch64, ASan/UBSan,
# TSan, valgrind, the aarch64 selftest under qemu-user, musl) and show what they printed.
if [ -z "${c_pid:-}" ]; then  # CORELAT_CI_ONLY=60: run them here
  bash -euo pipefail -c 'source .ci/c-checks.sh'
else
  c_rc=0
  wait "$c_pid" || c_rc=$?
  cat "$c_log"
  echo "-- C checks: exit $c_rc, $((SECONDS - c_started)) s since they started"
  [ "$c_rc" -eq 0 ] || { echo "the C checks failed (exit $c_rc)" >&2; exit 1; }
fi
