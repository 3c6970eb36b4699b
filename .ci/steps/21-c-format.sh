# C format: csrc/ as .clang-format lays it out (clang-format from Debian, 00-system installs it). A
# check only, seconds; to fix a failure run `clang-format -i csrc/*.c csrc/*.h` and commit the result.
clang-format --version
clang-format --dry-run --Werror csrc/*.c csrc/*.h
