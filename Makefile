# Developer shortcuts. The package itself builds with setuptools (pip install .).
CC ?= gcc
KERNELS := $(filter-out csrc/module.c csrc/selftest.c,$(wildcard csrc/*.c))
CFLAGS_COMMON := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Icsrc -g -pthread
PY ?= python3

.PHONY: build test sanitize tsan valgrind cross-aarch64 musl lint clean wheels docs matrix
build:
	$(PY) setup.py build_ext --inplace

test: build
	$(PY) -m pytest

# The C kernels alone, without Python, under AddressSanitizer and UndefinedBehaviorSanitizer.
sanitize:
	@mkdir -p build
	$(CC) $(CFLAGS_COMMON) -O1 -fsanitize=address,undefined -fno-sanitize-recover=all \
	    -o build/selftest-asan csrc/selftest.c $(KERNELS)
	timeout 300 ./build/selftest-asan

# The same under ThreadSanitizer: every shared word is atomic or ordered by a join. Twice: as built
# on glibc, and pinning the way musl builds do (by the creator after pthread_create, see affinity.h).
tsan:
	@mkdir -p build
	$(CC) $(CFLAGS_COMMON) -O1 -fsanitize=thread -o build/selftest-tsan csrc/selftest.c $(KERNELS)
	TSAN_OPTIONS=halt_on_error=1 CORELAT_SELFTEST_SLOW=1 timeout 300 ./build/selftest-tsan
	$(CC) $(CFLAGS_COMMON) -DCORELAT_PIN_AT_CREATE=0 -O1 -fsanitize=thread -o build/selftest-tsan-pin-after \
	    csrc/selftest.c $(KERNELS)
	TSAN_OPTIONS=halt_on_error=1 CORELAT_SELFTEST_SLOW=1 timeout 300 ./build/selftest-tsan-pin-after

valgrind:
	@mkdir -p build
	$(CC) $(CFLAGS_COMMON) -O1 -o build/selftest csrc/selftest.c $(KERNELS)
	CORELAT_SELFTEST_SLOW=1 CORELAT_SELFTEST_NO_INSN=1 timeout 600 valgrind --fair-sched=yes --error-exitcode=1 --leak-check=full -q ./build/selftest

# aarch64: compile warning-free and run the selftest under qemu-user (Debian: gcc-aarch64-linux-gnu,
# libc6-dev-arm64-cross, qemu-user-static). Every selftest run is bounded by timeout: a hang fails.
# CORELAT_SELFTEST_QEMU: qemu-user has no robust futex list, the one thing the selftest then allows.
cross-aarch64:
	@mkdir -p build
	aarch64-linux-gnu-gcc $(CFLAGS_COMMON) -O2 -static -o build/selftest-aarch64 csrc/selftest.c $(KERNELS)
	CORELAT_SELFTEST_SLOW=1 CORELAT_SELFTEST_QEMU=1 timeout 600 qemu-aarch64-static ./build/selftest-aarch64
	CORELAT_SELFTEST_SLOW=1 CORELAT_SELFTEST_QEMU=1 timeout 600 qemu-aarch64-static -cpu cortex-a57 ./build/selftest-aarch64  # no LSE: the LL/SC loop

# musl (what musllinux wheels run on): the selftest built static with zig cc (pip install ziglang) for
# x86-64 and aarch64, run natively and under qemu-user (bounded: a hang fails), and the whole extension
# compiled and linked against musl with the Python and NumPy headers of $(PY) (a compile check: no musl
# Python here to import it).
ZIGCC ?= $(PY) -m ziglang cc
MUSL_CFLAGS := $(CFLAGS_COMMON) -O2
musl:
	@mkdir -p build
	$(ZIGCC) -target x86_64-linux-musl $(MUSL_CFLAGS) -static -o build/selftest-musl-x86_64 csrc/selftest.c $(KERNELS)
	$(ZIGCC) -target aarch64-linux-musl $(MUSL_CFLAGS) -static -o build/selftest-musl-aarch64 csrc/selftest.c $(KERNELS)
	timeout 300 ./build/selftest-musl-x86_64
	CORELAT_SELFTEST_SLOW=1 CORELAT_SELFTEST_QEMU=1 timeout 600 qemu-aarch64-static ./build/selftest-musl-aarch64
	# Debian's python3 headers: pyconfig.h includes <MULTIARCH/python3.X/pyconfig.h> from /usr/include,
	# a folder a musl build must not search (glibc's headers); give it only that one sub-folder.
	rm -rf build/musl-pyinc && mkdir -p build/musl-pyinc
	ma=$$($(PY) -c 'import sysconfig; print(sysconfig.get_config_var("MULTIARCH") or "")'); \
	  v=$$(basename "$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"); \
	  if [ -n "$$ma" ] && [ -d "/usr/include/$$ma/$$v" ]; then mkdir -p "build/musl-pyinc/$$ma" && ln -s "/usr/include/$$ma/$$v" "build/musl-pyinc/$$ma/$$v"; fi
	$(ZIGCC) -target x86_64-linux-musl $(MUSL_CFLAGS) -DNPY_NO_DEPRECATED_API=NPY_1_23_API_VERSION -fPIC -shared \
	    -I"$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["include"])')" -Ibuild/musl-pyinc \
	    -I"$$($(PY) -c 'import numpy; print(numpy.get_include())')" \
	    -o build/_corelat-musl-x86_64.so csrc/module.c $(KERNELS)
	! nm -D build/_corelat-musl-x86_64.so | grep -q GLIBC

# The sdist and manylinux2014 wheels (x86-64 for each CPython 3.9-3.13 found, aarch64 for the system's
# python3) in dist/, with zig cc against glibc 2.17; checked with auditwheel show and twine check.
# The x86-64 interpreters are pyenv's (as .ci/wheels.sh looks for them) or CORELAT_WHEEL_PYTHONS="py1 py2";
# checked first, so a machine without any says so at once, not after a minute of building.
WHEEL_PYENV = $${PYENV_ROOT:-$$HOME/.pyenv}/versions
wheels:
	@if [ -n "$$CORELAT_WHEEL_PYTHONS" ]; then \
	  for p in $$CORELAT_WHEEL_PYTHONS; do \
	    "$$p" -m pip --version >/dev/null 2>&1 || { echo "make wheels: CORELAT_WHEEL_PYTHONS names $$p, which is not a Python with pip to build a wheel with" >&2; exit 2; }; \
	  done; \
	else \
	  found=; for v in 9 10 11 12 13; do for p in "$(WHEEL_PYENV)"/3.$$v.*/bin/python3; do [ -e "$$p" ] && found=1; done; done; \
	  [ -n "$$found" ] || { echo "make wheels: no CPython 3.9-3.13 in $(WHEEL_PYENV)/3.{9..13}.*/bin/python3 to build the x86-64 wheels with: pyenv install 3.11 (or any 3.9-3.13), or CORELAT_WHEEL_PYTHONS=\"/path/to/python3.X ...\" make wheels (CPythons with pip and their own headers: not Debian's /usr/bin/python3)" >&2; exit 2; }; \
	fi
	bash .ci/wheels.sh

# API reference, user guide (docs/*.md: the README is the tour), notebooks (executed) and CLI reference in docs/_build/html;
# warnings are errors. Needs corelat installed in $(PY) with the docs extra (pip install '.[docs]'):
# checked first (outside the checkout, as docs/conf.py imports corelat), so a missing one is one line.
DOCS_MODULES := sphinx myst_nb matplotlib ipykernel corelat
docs:
	@missing=$$($(PY) -c 'import importlib.util, os, sys; here = os.path.realpath("."); \
	  sys.path[:] = [p for p in sys.path if os.path.realpath(p or ".") != here]; \
	  print(", ".join(m for m in sys.argv[1:] if importlib.util.find_spec(m) is None))' $(DOCS_MODULES)) \
	  || { echo "make docs: cannot run PY=$(PY); give a Python: make docs PY=.venv/bin/python" >&2; exit 1; }; \
	if [ -n "$$missing" ]; then \
	  if [ "$(PY)" = python3 ]; then hint=".venv/bin/pip install '.[docs]' and make docs PY=.venv/bin/python"; \
	  else hint="$(PY) -m pip install '.[docs]'"; fi; \
	  echo "make docs: PY=$(PY) cannot import $$missing (the docs extra); install it: $$hint" >&2; exit 1; \
	fi
	$(PY) -m sphinx -W --keep-going -b html docs docs/_build/html

# The tests on every supported Python found, newest numpy, and once with the oldest (noxfile.py).
matrix:
	$(PY) -m nox

lint:
	ruff check corelat tests benchmarks
	clang-format --dry-run --Werror csrc/*.c csrc/*.h

clean:
	rm -rf build dist docs/_build docs/generated corelat/*.so
