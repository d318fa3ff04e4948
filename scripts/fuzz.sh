#!/usr/bin/env bash
# Fuzzing: builds the libFuzzer targets of tests/fuzz with Debian's clang under AddressSanitizer
# and UndefinedBehaviorSanitizer (build-fuzz/) and runs each from the seeds in the tree.
#
#   scripts/fuzz.sh [SECONDS] [TARGET ...]    every target (expr job manifest kt_cache problem npy
#                                             database) or those
#                                             named, SECONDS each (default 60)
#   scripts/fuzz.sh --runs N [TARGET ...]     N executions each instead
#   scripts/fuzz.sh --run BUILD_DIR TARGET [libFuzzer options]
#                                             one built target (what `ctest -L fuzz` runs)
#   scripts/fuzz.sh --smoke BUILD_DIR TARGET [SECONDS]
#                                             the short run of the ordinary build (CI): the
#                                             target under a plain mutation driver, no clang
#
# Each run prints libFuzzer's final line with the executions done ("Done N runs in S second(s)");
# a finding (crash, sanitizer report, an exception other than ktune::Error, a unit over 10 s,
# memory over 2 GB) stops it with a non-zero status and leaves the input as crash-*/timeout-*
# in build-fuzz/findings/. Needs clang and libFuzzer: apt-get install clang libclang-rt-14-dev.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
TARGETS=(expr job manifest kt_cache problem npy database)

# The seeds of a target: examples from the tree, copied (gz recordings unpacked) to a directory;
# a database is made by the build's ktune (in $3) replaying a small recording.
seeds() {
  local target=$1 dir=$2 build=${3:-}
  mkdir -p "$dir"
  case $target in
    expr | problem | npy) cp "$SRC"/tests/fuzz/seeds/"$target"/* "$dir" ;;
    database)
      KTUNE_CACHE_DIR="$dir/.cache" "$build/tuner/ktune" tune --replay \
        "$SRC/tests/data/replay/gemm_small.json" --budget-evals 4 --retime-top 0 \
        --db "$dir/seed.db" -q >/dev/null
      rm -rf "$dir/.cache"
      ;;
    job) cp "$SRC"/configs/*.toml "$SRC"/configs/replay/*.toml "$dir" ;;
    manifest)
      cp "$SRC"/tests/data/manifests/vecscale.toml "$dir"
      for f in "$SRC"/tests/data/manifests/broken/*.toml; do cp "$f" "$dir/broken-$(basename "$f")"; done
      ;;
    kt_cache)
      # The fixtures cut to their first entries: small seeds keep each execution fast.
      for f in "$SRC"/tests/data/replay/*.json "$SRC"/tests/data/replay/*.json.gz; do
        python3 - "$f" "$dir/$(basename "${f%.gz}")" <<'EOF'
import gzip, json, sys
src = sys.argv[1]
d = json.load(gzip.open(src) if src.endswith(".gz") else open(src))
d["cache"] = dict(list(d["cache"].items())[:4])
for entry in d["cache"].values():
    entry["times"] = entry.get("times", [])[:3]
json.dump(d, open(sys.argv[2], "w"))
EOF
      done
      ;;
  esac
}

# Configures the clang build with ASan+UBSan and the fuzz targets. The same build holds the
# whole test suite under the sanitizers: cmake --build build-fuzz && ctest --test-dir build-fuzz
# -LE 'gpu|fuzz' (docs/design.md, "Fuzzing and sanitizers").
sanitized_build() {
  cmake -S "$SRC" -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -gline-tables-only" "-DCMAKE_C_FLAGS_DEBUG=-O1 -gline-tables-only" \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DKTUNE_FUZZ=ON \
    -DKTUNE_SANITIZE=address,undefined -DKTUNE_BUILD_BENCH=OFF \
    -DPython3_EXECUTABLE=/usr/bin/python3 >/dev/null
}

run_one() {
  local build=$1 target=$2
  shift 2
  local work="$build/fuzz-work"
  seeds "$target" "$work/seeds/$target" "$build"
  mkdir -p "$work/corpus/$target" "$work/findings"
  export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
  # The manifest and job targets write their input to a file: keep those in memory.
  [[ -d /dev/shm ]] && export TMPDIR=/dev/shm
  "$build/tests/fuzz/fuzz_$target" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$work/findings/$target-" "$@" "$work/corpus/$target" "$work/seeds/$target" \
    2>&1 | grep -E '^(Done|stat::number_of_executed_units|==[0-9]+==ERROR|SUMMARY|.*runtime error)' \
    | sed "s/^/[$target] /"
  return "${PIPESTATUS[0]}"
}

# The CI's short run (tests/CMakeLists.txt): the gcc-built driver of tests/fuzz/smoke_main.cpp
# over the same seeds, SECONDS of random mutations.
if [[ ${1:-} == --smoke ]]; then
  build=$2 target=$3 seconds=${4:-15}
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  seeds "$target" "$work/seeds" "$build"
  export TMPDIR=$work  # the targets' scratch files go with it
  "$build/tests/fuzz_smoke_$target" "$seconds" "$work/seeds"
  exit $?
fi

if [[ ${1:-} == --run ]]; then
  build=$2 target=$3
  shift 3
  run_one "$build" "$target" "$@"
  exit $?
fi

limit=(-max_total_time=${1:-60})
if [[ ${1:-} == --runs ]]; then
  limit=(-runs="$2")
  shift 2
elif [[ $# -gt 0 ]]; then
  shift
fi
[[ $# -gt 0 ]] && TARGETS=("$@")

BUILD="$SRC/build-fuzz"
sanitized_build "$BUILD"
cmake --build "$BUILD" -j"${KTUNE_FUZZ_JOBS:-$(nproc)}" --target ktune "${TARGETS[@]/#/fuzz_}"
status=0
for t in "${TARGETS[@]}"; do
  run_one "$BUILD" "$t" "${limit[@]}" || status=1
done
exit $status
