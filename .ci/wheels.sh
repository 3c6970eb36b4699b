#!/usr/bin/env bash
# Build the sdist and manylinux2014 (glibc 2.17) wheels into dist/, on this machine, without containers
# (`make wheels`). Why this way: a manylinux wheel must not use glibc symbols newer than its tag, and
# this machine's glibc is 2.36; `zig cc -target ARCH-linux-gnu.2.17` (the `ziglang` wheel from PyPI)
# compiles and links against glibc 2.17's symbol set for x86-64 and aarch64 alike, so no old-glibc
# container or cross sysroot is needed. The wheels are built from the sdist (which proves the sdist
# complete), warning-free, then tagged manylinux2014 and checked with `auditwheel show` (which reads
# the symbol versions) and `twine check`. cibuildwheel ([tool.cibuildwheel] in pyproject.toml) builds
# the same set, plus musllinux, in the manylinux containers of a real CI.
#   x86-64: one wheel per CPython found (pyenv's 3.9-3.13; CORELAT_WHEEL_PYTHONS="py1 py2" to choose).
#   aarch64: CPython 3.11, cross-built by the system's python3 with Debian's arm64 Python headers
#            (fetched with a private apt state under build/, the system's apt is left alone).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${CORELAT_WHEEL_DIR:-$root/dist}
work=$root/build/wheels
tools=$root/build/wheel-tools
sysroot=$root/build/aarch64-sysroot
unset PYTHONDONTWRITEBYTECODE   # its "byte-compiling is disabled" notes are no build warnings
export PIP_ROOT_USER_ACTION=ignore   # CI builds as root, on purpose
mkdir -p "$out" "$work"
rm -f "$out"/corelat-*

if [ ! -x "$tools/bin/auditwheel" ]; then
  /usr/bin/python3 -m venv "$tools"
  "$tools/bin/python" -m pip install -q --upgrade pip
  "$tools/bin/python" -m pip install -q ziglang build wheel auditwheel twine
fi
zig="$tools/bin/python -m ziglang cc"
# The cross build runs without build isolation (pip would fetch aarch64 build requirements for a build
# that runs here), so the tools venv holds pyproject.toml's build requirements itself.
"$tools/bin/python" -m pip install -q $("$tools/bin/python" -c '
import sys, tomllib
print(" ".join(tomllib.load(open(sys.argv[1], "rb"))["build-system"]["requires"]))' "$root/pyproject.toml")

no_warnings() { bash "$root/.ci/no-warnings.sh" "$1"; }

# manylinux tag for a linux_ARCH wheel, checked by auditwheel against its symbol versions.
tag_manylinux2014() {  # WHEEL ARCH
  local whl=$1 arch=$2 tagged
  tagged=$("$tools/bin/wheel" tags --remove --platform-tag "manylinux_2_17_$arch.manylinux2014_$arch" "$whl")
  "$tools/bin/auditwheel" show "$(dirname "$whl")/$tagged" | tee "$work/auditwheel.log"
  tr -s ' \n' ' ' <"$work/auditwheel.log" | grep -q "platform tag: \"manylinux_2_17_$arch\"" \
    || { echo "auditwheel does not accept $tagged as manylinux2014" >&2; return 1; }
  mv "$(dirname "$whl")/$tagged" "$out/"
  echo "built $out/$tagged"
}

echo "-- sdist"
"$tools/bin/pyproject-build" --sdist -o "$out" "$root" >"$work/sdist.log" 2>&1 \
  || { cat "$work/sdist.log"; exit 1; }
no_warnings "$work/sdist.log"
sdist=$(ls "$out"/corelat-*.tar.gz)

pythons=${CORELAT_WHEEL_PYTHONS:-$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.{9,10,11,12,13}.*/bin/python3 2>/dev/null || true)}
[ -n "$pythons" ] || { echo "no CPython 3.9-3.13 found (pyenv) to build x86-64 wheels with" >&2; exit 1; }
for py in $pythons; do
  echo "-- x86_64 wheel with $("$py" -V)"
  rm -rf "$work/x86_64" && mkdir -p "$work/x86_64"
  CC="$zig -target x86_64-linux-gnu.2.17" LDSHARED="$zig -target x86_64-linux-gnu.2.17 -shared" \
    "$py" -m pip wheel -v --no-deps -w "$work/x86_64" "$sdist" >"$work/x86_64.log" 2>&1 \
    || { cat "$work/x86_64.log"; exit 1; }
  no_warnings "$work/x86_64.log"
  tag_manylinux2014 "$(ls "$work"/x86_64/corelat-*-linux_x86_64.whl)" x86_64
done

echo "-- aarch64 wheel with the system's python3 and Debian's arm64 headers"
bash "$root/.ci/aarch64-sysroot.sh" "$sysroot"
rm -rf "$work/aarch64" && mkdir -p "$work/aarch64"
pyver=$("$tools/bin/python" -c 'import sys; print(f"{sys.version_info[0]}{sys.version_info[1]}")')
# The system's /usr/include/python3.X/pyconfig.h picks <aarch64-linux-gnu/python3.X/pyconfig.h>, which
# the sysroot holds; the extension's name and the wheel's platform are the target's, not this machine's.
CC="$zig -target aarch64-linux-gnu.2.17" LDSHARED="$zig -target aarch64-linux-gnu.2.17 -shared" \
  CFLAGS="-I$sysroot/usr/include" SETUPTOOLS_EXT_SUFFIX=".cpython-$pyver-aarch64-linux-gnu.so" \
  _PYTHON_HOST_PLATFORM=linux-aarch64 \
  "$tools/bin/python" -m pip wheel -v --no-deps --no-build-isolation -w "$work/aarch64" "$sdist" \
  >"$work/aarch64.log" 2>&1 \
  || { cat "$work/aarch64.log"; exit 1; }
no_warnings "$work/aarch64.log"
tag_manylinux2014 "$(ls "$work"/aarch64/corelat-*-linux_aarch64.whl)" aarch64

"$tools/bin/twine" check --strict "$out"/corelat-*
ls -l "$out"
