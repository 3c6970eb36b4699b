# System packages CI needs beyond the base image.
need=()
command -v taskset >/dev/null || need+=(util-linux)
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
command -v xz >/dev/null || need+=(xz-utils)
command -v valgrind >/dev/null || need+=(valgrind)
command -v aarch64-linux-gnu-gcc >/dev/null || need+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
command -v qemu-aarch64-static >/dev/null || need+=(qemu-user-static)
command -v clang-format >/dev/null || need+=(clang-format)
command -v chromium >/dev/null || need+=(chromium)          # 47-report: the reports in a real browser
command -v pdfinfo >/dev/null || need+=(poppler-utils)      # 47-report: the PDF's pages
if [ ${#need[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${need[@]}"
fi
