# Developer shortcuts. The package itself builds with setuptools (pip install .).
CC ?= gcc
KERNELS := $(filter-out csrc/module.c csrc/selftest.c,$(wildcard csrc/*.c))
CFLAGS_COMMON := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Icsrc -g -pthread
PY ?= python3

.PHONY: build test sanitize tsan valgrind cross-aarch64 lint clean wheels docs matrix
build:
	$(PY) setup.py build_ext --inplace

test: build
	$(PY) -m pytest

# The C kernels alone, without Python, under AddressSanitizer and UndefinedBehaviorSanitizer.
sanitize:
	$(CC) $(CFLAGS_COMMON) -O1 -fsanitize=address,undefined -fno-sanitize-recover=all \
	    -o build/selftest-asan csrc/selftest.c $(KERNELS)
	./build/selftest-asan

# The same under ThreadSanitizer: every shared word is atomic or ordered by a join.
tsan:
	$(CC) $(CFLAGS_COMMON) -O1 -fsanitize=thread -o build/selftest-tsan csrc/selftest.c $(KERNELS)
	TSAN_OPTIONS=halt_on_error=1 CORELAT_SELFTEST_SLOW=1 ./build/selftest-tsan

valgrind:
	$(CC) $(CFLAGS_COMMON) -O1 -o build/selftest csrc/selftest.c $(KERNELS)
	CORELAT_SELFTEST_SLOW=1 valgrind --fair-sched=yes --error-exitcode=1 --leak-check=full -q ./build/selftest

# aarch64: compile warning-free and run the selftest under qemu-user (Debian: gcc-aarch64-linux-gnu,
# libc6-dev-arm64-cross, qemu-user-static).
cross-aarch64:
	aarch64-linux-gnu-gcc $(CFLAGS_COMMON) -O2 -static -o build/selftest-aarch64 csrc/selftest.c $(KERNELS)
	CORELAT_SELFTEST_SLOW=1 qemu-aarch64-static ./build/selftest-aarch64
	CORELAT_SELFTEST_SLOW=1 qemu-aarch64-static -cpu cortex-a57 ./build/selftest-aarch64  # no LSE: the LL/SC loop

# The sdist and manylinux2014 wheels (x86-64 for each CPython 3.9-3.13 found, aarch64 for the system's
# python3) in dist/, with zig cc against glibc 2.17; checked with auditwheel show and twine check.
wheels:
	bash .ci/wheels.sh

# API reference, user guide (the README), notebooks (executed) and CLI reference in docs/_build/html;
# warnings are errors. Needs corelat installed with the docs extra: pip install '.[docs]'.
docs:
	$(PY) -m sphinx -W --keep-going -b html docs docs/_build/html

# The tests on every supported Python found, newest numpy, and once with the oldest (noxfile.py).
matrix:
	$(PY) -m nox

lint:
	ruff check corelat tests benchmarks

clean:
	rm -rf build dist docs/_build docs/generated corelat/*.so
