# C extension warnings (-Wall -Wextra must be silent), x86-64 and aarch64; the C kernels alone under
# ASan/UBSan, ThreadSanitizer and valgrind; the aarch64 selftest under qemu-user; on musl (make musl:
# zig cc from the ziglang wheel) the selftest for x86-64 natively and aarch64 under qemu-user, and the
# extension compiled and linked. make musl takes ~40 s with zig's cache warm; on a fresh machine zig
# first builds musl for both targets: 376 s measured with an empty cache on 2 CPUs at load average 8
# (the whole step 596 s there, 2 min of CPU).
inc_py=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
inc_np=$("$venv/bin/python" -c 'import numpy; print(numpy.get_include())')
for f in csrc/*.c; do
  gcc -std=c11 -D_GNU_SOURCE -DNPY_NO_DEPRECATED_API=NPY_1_23_API_VERSION -Wall -Wextra -Werror \
      -fsyntax-only -Icsrc -I"$inc_py" -I"$inc_np" "$f"
  # The binding (module.c) needs aarch64 Python headers, which the venv's (the system's, as the README's
  # command makes it) do not have; 60-wheels builds it for aarch64 (-Werror) against Debian's arm64 ones.
  if [ "$f" = csrc/module.c ]; then continue; fi
  aarch64-linux-gnu-gcc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -fsyntax-only -Icsrc "$f"
done
mkdir -p build
make -s sanitize
make -s tsan
if command -v valgrind >/dev/null; then make -s valgrind; fi
make -s cross-aarch64
t_m=$SECONDS
"$venv/bin/python" -m pip install -q ziglang
make -s musl PY="$venv/bin/python"
echo "-- musl done in $((SECONDS - t_m)) s"
