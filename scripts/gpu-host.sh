#!/usr/bin/env bash
# Builds ktune on the GPU host and runs what needs a GPU, writing logs under OUT_DIR.
# usage: scripts/gpu-host.sh KIT_DIR OUT_DIR [steps...]
#   steps: build (always first), test (GPU tests), smoke (short tune), issue3 (brute-force
#   figures), throughput (270-config space), all
set -uo pipefail
kit=${1:?kit dir}; out=${2:?out dir}; shift 2
steps=${*:-build test}
mkdir -p "$out"
# shellcheck disable=SC1091
source "$kit/setup.sh" >/dev/null
export KTUNE_CACHE_DIR=${KTUNE_CACHE_DIR:-/tmp/ktune-cache}
build=/tmp/ktune-build
log() { echo "== $*" | tee -a "$out/summary.txt"; }

log "host: $(nproc) cores, $(nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader 2>&1)"
start=$(date +%s)
cmake -S . -B $build -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE="$Python3_EXECUTABLE" \
  >"$out/cmake.log" 2>&1 || { tail -30 "$out/cmake.log"; exit 1; }
ninja -C $build >"$out/build.log" 2>&1 || { grep -E "error|FAILED" "$out/build.log" | head -40; exit 1; }
log "build: $(( $(date +%s) - start )) s"
ktune=$build/tuner/ktune
$ktune devices | tee -a "$out/summary.txt"

for step in $steps; do
  case $step in
    test)
      (cd $build && ctest -L gpu --output-on-failure --timeout 900) >"$out/gpu-tests.log" 2>&1
      log "gpu tests: rc=$? $(grep -E 'tests passed|tests failed' "$out/gpu-tests.log")"
      grep -E "^\s+(fault|block)=|Failure|Expected|error" "$out/gpu-tests.log" | head -40 ;;
    cpu-test)
      (cd $build && ctest -LE gpu -j8 --timeout 600) >"$out/cpu-tests.log" 2>&1
      log "cpu tests: rc=$? $(grep -E 'tests passed|tests failed' "$out/cpu-tests.log")" ;;
    smoke)
      rm -f /tmp/smoke.db
      $ktune tune reduce --problem n=2**25 --db /tmp/smoke.db --strategy random --budget-evals 60 --json \
        >"$out/smoke.json" 2>"$out/smoke.err"
      log "smoke tune: rc=$? $(python3 -c "import json;d=json.load(open('$out/smoke.json'));print({k:d[k] for k in ('trials','by_status','wall_seconds','configs_per_second','gpu_share','best')})" 2>&1)"
      $ktune best reduce --problem n=2**25 --db /tmp/smoke.db 2>&1 | tee -a "$out/summary.txt" ;;
    *) log "unknown step $step" ;;
  esac
done
