# The README's second command (install and run the tests), literally, in a fresh venv from the clone
# root, with only the system on PATH. CORELAT_SHARED points the tests at ../shared (a plain clone skips
# the tests that need it); CORELAT_TEST_INSTALLED=1 makes them refuse to test the source tree.
rm -rf "$venv"
CORELAT_TEST_INSTALLED=1 CORELAT_SHARED="$shared" bash .ci/readme-command.sh run "Fresh machine" 2
