# Distribution (issue 16): the sdist and manylinux2014 wheels (make wheels: zig cc against glibc 2.17,
# auditwheel show, twine check, warning-free), then what a user without a compiler gets from them:
#  1. the x86-64 wheel installed (binaries only) into a fresh venv of the system's python3 with no
#     compiler on PATH, and one real measurement against it (the pure tier runs on 3.11 in 30-tests and
#     against the wheels of 3.9, 3.10, 3.12 and 3.13, built here from the same sdist, in 75-matrix:
#     once more here was a repeat);
#  2. the aarch64 wheel's extension imported, and a tiny measurement run, under qemu-user by Debian's
#     arm64 python3 with the aarch64 numpy wheel from PyPI;
#  3. (the sdist from scratch in a fresh venv: no longer a step of its own; .ci/wheels.sh builds every
#     wheel from the sdist with build isolation, warning-free, and 10-install/30-tests build the
#     checkout with the system's python3 the same way)
#  4. the sdist built without the extension (CORELAT_NO_EXTENSION=1, what non-Linux platforms get),
#     in place of the wheel in the same venv (one venv, not two): import works, measuring raises a
#     CorelatError, the analysis tests pass;
#  5. the README's development command (setup.py build_ext --inplace) in a fresh copy of the clone.
# The wheels and sdist are kept in $artefacts/dist.
t_w=$SECONDS
bash .ci/wheels.sh
mkdir -p "$artefacts/dist"
cp dist/corelat-* "$artefacts/dist/"
echo "-- wheels built in $((SECONDS - t_w)) s"
fresh_venv() { rm -rf "$1" && /usr/bin/python3 -m venv "$1"; }  # the system's python3, as a user's
pyx=$(/usr/bin/python3 -c 'import sys; print(f"{sys.version_info[0]}{sys.version_info[1]}")')
export PIP_ROOT_USER_ACTION=ignore

# A PATH with every system tool but compilers, assemblers and linkers.
nocc=$repo/build/no-compiler-bin
rm -rf "$nocc" && mkdir -p "$nocc"
for tool in /usr/bin/*; do
  case ${tool##*/} in
    cc | c++ | c89* | c99* | gcc* | g++* | cpp* | clang* | *-gcc* | *-g++* | *-cc | ld | ld.* | *-ld | *-ld.* | as | *-as | tcc | zig) ;;
    *) ln -s "$tool" "$nocc/" ;;
  esac
done
if env PATH="$nocc" /bin/sh -c 'command -v cc || command -v gcc || command -v x86_64-linux-gnu-gcc'; then
  echo "a compiler is still on the no-compiler PATH" >&2
  exit 1
fi

t_w=$SECONDS
echo "-- 1. the x86-64 wheel, no compiler on PATH: one real measurement against it"
# (the whole suite runs against an installed wheel in 75-matrix, on the oldest stack; the pure tier on the newest)
wv=$repo/build/venv-wheel
fresh_venv "$wv"
whl=$(ls dist/corelat-*-cp$pyx-cp$pyx-manylinux*_x86_64.whl)
env PATH="$nocc" "$wv/bin/python" -m pip install -q --only-binary :all: "$whl"
(cd /tmp && env PATH="$nocc" "$wv/bin/python" "$repo/.ci/one-measurement.py")
echo "-- 1. done in $((SECONDS - t_w)) s"

t_w=$SECONDS
echo "-- 2. the aarch64 wheel under qemu-user"
sysroot=$repo/build/aarch64-sysroot   # made by .ci/wheels.sh
site=$repo/build/aarch64-site
rm -rf "$site" && mkdir -p "$site/dl"
"$wv/bin/python" -m pip download -q --no-deps --only-binary :all: --platform manylinux2014_aarch64 \
  --platform manylinux_2_28_aarch64 --python-version "$pyx" --implementation cp -d "$site/dl" numpy
for w in "$site"/dl/numpy-*.whl dist/corelat-*-cp$pyx-cp$pyx-manylinux*_aarch64.whl; do
  "$wv/bin/python" -m zipfile -e "$w" "$site"
done
(cd /tmp && PYTHONPATH=$site qemu-aarch64-static -L "$sysroot" "$sysroot/usr/bin/python${pyx:0:1}.${pyx:1}" -c '
import platform, corelat, corelat._corelat
assert platform.machine() == "aarch64", platform.machine()
print("aarch64:", corelat._corelat.__file__, corelat.timer_info())
r = corelat.measure([0, 1], round_trips=20, samples=5, timeout=30)
print("aarch64 measure:", r.median.shape, r.metadata["timer"]["name"])
')
echo "-- 2. done in $((SECONDS - t_w)) s"

t_w=$SECONDS
echo "-- 4. the sdist without the extension (CORELAT_NO_EXTENSION=1), the analysis tests against it"
pv=$wv   # the venv of 1., its wheel replaced by the sdist's pure build
sdist=$(ls dist/corelat-*.tar.gz)
"$pv/bin/python" -m pip uninstall -q -y corelat
CORELAT_NO_EXTENSION=1 "$pv/bin/python" -m pip install -q "$sdist[test]"
(cd /tmp && "$pv/bin/python" - <<'EOF'
import importlib.util, corelat
assert importlib.util.find_spec("corelat._corelat") is None, "the extension was built"
try:
    corelat.measure()
except corelat.CorelatError as e:
    print("no extension: measure() ->", type(e).__name__, e)
else:
    raise SystemExit("measure() worked without the extension")
EOF
)
(cd /tmp && CORELAT_TEST_INSTALLED=1 CORELAT_SHARED="$shared" "$pv/bin/python" -m pytest -p no:cacheprovider \
  -c "$repo/pyproject.toml" --rootdir "$repo" -q \
  "$repo/tests/test_formats.py" "$repo/tests/test_structure.py" "$repo/tests/test_compare.py" \
  "$repo/tests/test_stats.py" "$repo/tests/test_result.py" "$repo/tests/test_plot.py" \
  "$repo/tests/test_no_extension.py")
echo "-- 4. done in $((SECONDS - t_w)) s"

t_w=$SECONDS
echo "-- 5. the README's development command (build_ext --inplace), literally, in a fresh copy of the clone"
dev=$repo/build/dev-copy
rm -rf "$dev" && mkdir -p "$dev"
git ls-files -z | xargs -0 cp --parents -t "$dev"
bash .ci/readme-command.sh run Development 1 "$dev" >"$artefacts/build-ext-inplace.log" 2>&1 \
  || { cat "$artefacts/build-ext-inplace.log"; exit 1; }
bash .ci/no-warnings.sh "$artefacts/build-ext-inplace.log"
ls "$dev"/corelat/_corelat.*.so
echo "-- 5. done in $((SECONDS - t_w)) s"
