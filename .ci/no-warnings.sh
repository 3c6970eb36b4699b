#!/usr/bin/env bash
# Fail when a build or install log (the compiler's, setuptools', pip's output) has a warning, except pip's
# notes on index locations of this machine's pip configuration that do not exist (not the package's doing).
# Usage: bash .ci/no-warnings.sh LOG
if grep -i -E 'warning|!!' "$1" | grep -v -E "WARNING: Location '[^']*' is ignored"; then
  echo "warnings in $1" >&2
  exit 1
fi
