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
    bench-compile)
      $build/bench/bench_compile --benchmark_min_time=2 >"$out/bench-compile.log" 2>&1
      log "bench_compile: rc=$?"; grep -E "^BM_" "$out/bench-compile.log" | tee -a "$out/summary.txt" ;;
    kt270)
      # Throughput on the 270-configuration space, each run with an empty compile cache and
      # measuring everything again, as a tuner without a cache would.
      for mode in 7 32 0; do
        export KTUNE_CACHE_DIR=/tmp/ktune-cache-kt$mode; rm -rf $KTUNE_CACHE_DIR
        $ktune tune --config configs/reduce-kt270.toml --samples $mode --db /tmp/kt270.db --no-reuse \
          --retime-top 0 --json >"$out/kt270-s$mode.json" 2>"$out/kt270-s$mode.err"
        log "kt270 samples=$mode: rc=$?"
      done
      export KTUNE_CACHE_DIR=/tmp/ktune-cache
      python3 bench/summarize_tune.py samples7="$out/kt270-s7.json" samples32="$out/kt270-s32.json" \
        adaptive="$out/kt270-s0.json" | tee -a "$out/summary.txt" ;;
    brute)
      # The whole reduction space at 2^25 and 2^28, default (adaptive) measurement.
      for n in 25 28; do
        $ktune space reduce --problem n=2**$n --json --sample 0 >"$out/space-2_$n.json"
        $ktune tune reduce --problem n=2**$n --db /tmp/brute.db --json >"$out/brute-2_$n.json" 2>"$out/brute-2_$n.err"
        log "brute 2^$n: rc=$? $(python3 -c "import json;d=json.load(open('$out/space-2_$n.json'));print('cartesian',d['cartesian'],'valid',d['valid'])")"
      done
      python3 bench/summarize_tune.py b25="$out/brute-2_25.json" b28="$out/brute-2_28.json" \
        --db /tmp/brute.db --variants n=33554432 | tee -a "$out/summary.txt"
      cp /tmp/brute.db "$out/brute.db" ;;
    *) log "unknown step $step" ;;
  esac
done
