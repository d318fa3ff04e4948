#!/usr/bin/env bash
# The CPU test suite under AddressSanitizer and UndefinedBehaviorSanitizer: a Debug (-O1) build
# with -DKTUNE_SANITIZE=address,undefined in its own folder, then `ctest -LE 'gpu|fuzz'` with
# the sanitizers' options set so that any report fails its test.
#
#   scripts/sanitize.sh [--build-only | --test-only] [BUILD_DIR] [ctest options ...]
#
# BUILD_DIR defaults to build-sanitize; CC and CXX pick the compiler (gcc or clang; the fuzz
# targets of scripts/fuzz.sh need clang, this does not). KTUNE_SANITIZE_JOBS sets the build's
# parallelism (default: every core). Leaks are reported, except those in
# tests/sanitizers/lsan.supp (what the embedded Python interpreter keeps for the life of the
# process).
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
build_it=1 test_it=1
case ${1:-} in
  --build-only) test_it=0; shift ;;
  --test-only) build_it=0; shift ;;
esac
BUILD=${1:-$SRC/build-sanitize}
[[ $# -gt 0 ]] && shift

if ((build_it)); then
  cmake -S "$SRC" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1" "-DCMAKE_C_FLAGS_DEBUG=-O1 -g1" \
    -DKTUNE_SANITIZE=address,undefined -DKTUNE_BUILD_BENCH=OFF \
    "-DPython3_EXECUTABLE=${Python3_EXECUTABLE:-/usr/bin/python3}" >/dev/null
  cmake --build "$BUILD" -j"${KTUNE_SANITIZE_JOBS:-$(nproc)}"
fi
if ((test_it)); then
  # protect_shadow_gap=0: the CUDA driver maps memory where ASan's shadow gap would be.
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:protect_shadow_gap=0:detect_stack_use_after_return=0}
  export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$SRC/tests/sanitizers/lsan.supp:print_suppressions=0}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
  ctest --test-dir "$BUILD" -LE 'gpu|fuzz' --output-on-failure "$@"
fi
