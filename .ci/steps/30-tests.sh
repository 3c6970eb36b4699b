# The README's second command (install and run the tests), literally, from the clone root with only the
# system on PATH, in the venv step 10 made (as a user who ran the first command and then the second).
# This is the whole suite on the README's stack (the system's python3, the newest numpy), built from
# source. Through PYTEST_ADDOPTS: the tiers with a step of their own are left to it (the emulated
# machine: 35-vm, MPI: 40-fleet, Sphinx: 80-docs), and two workers (see .ci/run). CORELAT_SHARED
# points the tests at ../shared (a plain clone skips the tests that need it); CORELAT_TEST_INSTALLED=1
# makes them refuse to test the source tree. The notebook on two real machines' files runs once, in
# 45-notebooks (papermill, its executed copy kept), so its pytest twin is left out here.
PYTEST_ADDOPTS="-m '$WHOLE_SUITE' $PARALLEL --deselect tests/test_notebooks.py::test_compare_machines_on_two_real_machines" \
  CORELAT_TEST_INSTALLED=1 CORELAT_SHARED="$shared" \
  bash .ci/readme-command.sh run "Fresh machine" 2
