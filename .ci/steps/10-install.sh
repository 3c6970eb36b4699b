# The README's first command (install and measure this machine), literally, in a fresh venv from the
# clone root, with only the system on PATH (python3 is the system's). Later steps use this venv.
rm -rf "$venv"
bash .ci/readme-command.sh run "Fresh machine" 1
