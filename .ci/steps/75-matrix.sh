# The version matrix (issue 16, noxfile.py): the tests on CPython 3.9, 3.10, 3.12 and 3.13 with the newest
# numpy and scipy each has, and once (`oldest`) on 3.9 with numpy 1.23 and scipy 1.9, the floors
# pyproject.toml declares; each installs the manylinux wheel 60-wheels built for it. 3.11 is covered
# by 40-tests (the README's command, built from source) and 60-wheels (its wheel, the whole suite).
# The fast subset: no notebooks (run in full by 40-tests), no emulated machine (90-vm).
pyroot=${PYENV_ROOT:-$HOME/.pyenv}
nox_path=/usr/bin:/bin
for v in 3.9 3.10 3.12 3.13; do
  d=$(ls -d "$pyroot"/versions/"$v".*/bin 2>/dev/null | tail -n 1)
  [ -n "$d" ] || { echo "CPython $v not found under $pyroot/versions" >&2; exit 1; }
  nox_path=$d:$nox_path
done
nv=$repo/build/venv-nox
rm -rf "$nv"
/usr/bin/python3 -m venv "$nv"
"$nv/bin/python" -m pip install -q nox
env PATH="$nox_path" PIP_ROOT_USER_ACTION=ignore CORELAT_WHEELHOUSE="$repo/dist" CORELAT_SHARED="$shared" \
  "$nv/bin/nox" -f noxfile.py --envdir "$repo/build/nox" -s tests-3.9 tests-3.10 tests-3.12 tests-3.13 oldest
