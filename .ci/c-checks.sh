# The C checks: extension warnings (-Wall -Wextra must be silent), x86-64 and aarch64; the C kernels
# alone under ASan/UBSan, ThreadSanitizer and valgrind; the aarch64 selftest under qemu-user; on musl
# (make musl: zig cc from the ziglang wheel) the selftest for x86-64 natively and aarch64 under
# qemu-user, and the extension compiled and linked. make musl takes ~40 s with zig's cache warm; on a
# fresh machine zig first builds musl for both targets (~150 s here, 376 s once at load average 8).
# Started in the background by 26-c-start.sh and awaited by 60-c.sh (minutes of one or two busy
# threads, which the test steps meanwhile must withstand, as a user's machine is never idle). Its own
# venv (build/ci-c-tools: ziglang, numpy's headers), so that no other step's pip runs into it.
tools=$repo/build/ci-c-tools
if [ ! -x "$tools/bin/python" ]; then
  /usr/bin/python3 -m venv "$tools"
  "$tools/bin/python" -m pip install -q ziglang numpy
fi
inc_py=$("$tools/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
inc_np=$("$tools/bin/python" -c 'import numpy; print(numpy.get_include())')
for f in csrc/*.c; do
  gcc -std=c11 -D_GNU_SOURCE -DNPY_NO_DEPRECATED_API=NPY_1_23_API_VERSION -Wall -Wextra -Werror \
      -fsyntax-only -Icsrc -I"$inc_py" -I"$inc_np" "$f"
  # The binding (module.c) needs aarch64 Python headers, which the venv's (the system's, as the README's
  # command makes it) do not have; 70-wheels builds it for aarch64 (-Werror) against Debian's arm64 ones.
  if [ "$f" = csrc/module.c ]; then continue; fi
  aarch64-linux-gnu-gcc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -fsyntax-only -Icsrc "$f"
done
mkdir -p build
for target in sanitize tsan valgrind cross-aarch64; do
  echo "-- $target"
  t_m=$SECONDS
  make -s "$target"
  echo "-- $target done in $((SECONDS - t_m)) s"
done
t_m=$SECONDS
make -s musl PY="$tools/bin/python"
echo "-- musl done in $((SECONDS - t_m)) s"
