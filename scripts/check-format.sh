#!/usr/bin/env bash
# Checks that every C, C++ and CUDA source of the project is formatted as .clang-format says
# (the CI step behind the `format` test). Exit 0: formatted; 1: not (the offending files and a
# diff are printed; `scripts/check-format.sh --fix` reformats them); 77: no clang-format here.
set -euo pipefail
cd "$(dirname "$0")/.."
clang_format=${CLANG_FORMAT:-$(command -v clang-format-14 || command -v clang-format || true)}
if [ -z "$clang_format" ]; then
  echo "check-format: no clang-format found (Debian: apt-get install clang-format); skipped"
  exit 77
fi
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.c' '*.cpp' '*.h' '*.hpp' '*.cu' '*.cuh' | grep -v '^tests/data/')
else
  mapfile -t files < <(find tuner db plugins kernels_src tests bench examples -type f \
    \( -name '*.c' -o -name '*.cpp' -o -name '*.h' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' \) \
    -not -path 'tests/data/*' | sort)
fi
if [ "${1:-}" = "--fix" ]; then
  "$clang_format" -i "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  if ! "$clang_format" --dry-run --Werror "$f" >/dev/null 2>&1; then bad+=("$f"); fi
done
if [ ${#bad[@]} -eq 0 ]; then
  echo "check-format: ${#files[@]} files formatted as .clang-format says ($("$clang_format" --version))"
  exit 0
fi
echo "check-format: ${#bad[@]} of ${#files[@]} files are not formatted as .clang-format says:"
for f in "${bad[@]}"; do
  echo "  $f"
  diff -u "$f" <("$clang_format" "$f") | head -20 || true
done
echo "run scripts/check-format.sh --fix"
exit 1
