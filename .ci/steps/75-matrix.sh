# The version matrix (noxfile.py), each session installing the manylinux wheel 70-wheels built for its
# Python: the whole suite on the oldest stack (`oldest`: 3.9 with numpy 1.23 and scipy 1.9, the floors
# pyproject.toml declares); the pure tier and one real measurement on the newest (`pure-3.13`, the
# newest numpy and scipy); one real measurement and the tests of files and of the command's start and
# end (`light`, noxfile.py's LIGHT_TESTS) on 3.10 and 3.12. 3.11 has the whole suite built from source
# in 30-tests and one measurement against its wheel in 70-wheels. (The whole suite on 3.13 as well
# took 5 minutes of CI's 27; its one finding, a flaky budget test, was not particular to 3.13.)
pyroot=${PYENV_ROOT:-$HOME/.pyenv}
nox_path=/usr/bin:/bin
for v in 3.9 3.10 3.12 3.13; do
  d=$(ls -d "$pyroot"/versions/"$v".*/bin 2>/dev/null | tail -n 1)
  [ -n "$d" ] || { echo "CPython $v not found under $pyroot/versions" >&2; exit 1; }
  nox_path=$d:$nox_path
done
nv=$repo/build/venv-nox
if [ ! -x "$nv/bin/nox" ]; then
  /usr/bin/python3 -m venv "$nv"
  "$nv/bin/python" -m pip install -q nox
fi
env PATH="$nox_path" CORELAT_WHEELHOUSE="$repo/dist" CORELAT_SHARED="$shared" \
  "$nv/bin/nox" -f noxfile.py --envdir "$repo/build/nox" -s light-3.10 light-3.12 pure-3.13 oldest
