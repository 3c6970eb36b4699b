#!/usr/bin/env bash
# An arm64 Debian CPython (interpreter, standard library, headers) unpacked into DIR, to cross-build the
# extension for aarch64 and to import it under qemu-user (qemu-aarch64-static -L DIR DIR/usr/bin/python3.X).
# The packages come from Debian's archive through apt with a private state under DIR's parent, so the
# system's apt configuration (its architectures, lists, installed packages) is not touched.
# Usage: bash .ci/aarch64-sysroot.sh DIR
set -euo pipefail
dir=$1
pyx=$(/usr/bin/python3 -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
if [ -x "$dir/usr/bin/python$pyx" ]; then exit 0; fi
apt=$dir.apt
rm -rf "$dir" "$apt"
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/debs" "$dir"
touch "$apt/status"
opts=(-q -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o "Dir::State::status=$apt/status"
      -o APT::Architecture=arm64 -o APT::Architectures::=arm64 -o APT::Sandbox::User=root)
apt-get "${opts[@]}" update >"$apt/update.log" 2>&1 || { cat "$apt/update.log"; exit 1; }
(cd "$apt/debs" && apt-get "${opts[@]}" download "python$pyx-minimal" "libpython$pyx-minimal" \
  "libpython$pyx-stdlib" "libpython$pyx-dev" libc6 libexpat1 zlib1g libffi8 libbz2-1.0 liblzma5 libgcc-s1 libstdc++6 \
  >"$apt/download.log" 2>&1) || { cat "$apt/download.log"; exit 1; }
for deb in "$apt"/debs/*.deb; do dpkg-deb -x "$deb" "$dir"; done
test -f "$dir/usr/include/aarch64-linux-gnu/python$pyx/pyconfig.h"
echo "aarch64 Python $pyx sysroot in $dir"
