#!/usr/bin/env bash
# The README's commands, as a new user copies them: the Nth ```sh block under the README heading
# "## SECTION..." ("Fresh machine" 1 installs and measures, 2 installs and tests; "Development" 1
# builds the extension in place).
#   bash .ci/readme-command.sh print SECTION N [DIR]   prints the command
#   bash .ci/readme-command.sh run SECTION N [DIR]     runs it literally in DIR (default: the clone root)
#       with only the system on PATH (no pyenv shim, no venv, nothing an earlier session left there)
set -euo pipefail
mode=$1 section=$2 n=$3
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${4:-$root}
cmd=$(awk -v n="$n" -v section="## $section" '
  /^## / { inside = (index($0, section) == 1) }
  inside && /^```sh$/ { block++; next }
  inside && /^```$/ && block == n { exit }
  inside && block == n { print }
' "$root/README.md")
if [ -z "$cmd" ]; then
  echo "README.md has no command $n under '## $section' (a \`\`\`sh block)" >&2
  exit 1
fi
case $mode in
  print) printf '%s\n' "$cmd" ;;
  run)
    echo "+ (PATH=/usr/bin:/bin) $cmd"
    cd "$dir"
    exec env -u VIRTUAL_ENV -u PYTHONPATH -u PYTHONHOME -u PYENV_VERSION PATH=/usr/bin:/bin /bin/bash -c "$cmd" ;;
  *) echo "usage: $0 print|run SECTION N [DIR]" >&2; exit 2 ;;
esac
