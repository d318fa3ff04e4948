# shellcheck shell=bash disable=SC2154  # out, build, ktune, limit and P come from lib.sh
# The test suites on the GPU host: the GPU tests, the CPU suite, the sanitizer build and its
# suite, and a short tune.

# step test: the GPU tests and the Python package's (ctest -L 'gpu|python'), one at a time
step_test() {
  # The Python package's GPU tests skip without a device. 228 s for 39 tests on an H200
  # (2026-11-28), one at a time (timing tests must not share the GPU).
  (cd "$build" && timeout -k 10 400 ctest -L 'gpu|python' --output-on-failure --timeout 150) >"$out/gpu-tests.log" 2>&1
  log "gpu tests: rc=$? $(grep -E 'tests passed|tests failed' "$out/gpu-tests.log")"
  grep -E "^\s+(fault|block)=|Failure|Expected|error" "$out/gpu-tests.log" | head -40
}

# step cpu-test: the CPU test suite (ctest -LE gpu), 16 tests at a time
step_cpu_test() {
  (cd "$build" && ctest -LE gpu -j16 --timeout 600 --output-on-failure) >"$out/cpu-tests.log" 2>&1
  log "cpu tests: rc=$? $(grep -E 'tests passed|tests failed' "$out/cpu-tests.log")"
  sed -n '/The following tests FAILED/,$p' "$out/cpu-tests.log" | tee -a "$out/summary.txt"
}

# step sanitize-build: the CPU suite's ASan+UBSan build (scripts/sanitize.sh) in build-gpu-sanitize, on every core
step_sanitize_build() {
  KTUNE_SANITIZE_JOBS=$(nproc) scripts/sanitize.sh --build-only build-gpu-sanitize \
    >"$out/sanitize-build.log" 2>&1
  log "sanitize build: rc=$? $(grep -cE 'runtime error|ERROR: AddressSanitizer' "$out/sanitize-build.log") reports"
}

# step sanitize-test: that build's CPU suite with the GPU hidden, as on a machine without one; the sanitizers' reports counted
step_sanitize_test() {
  (CUDA_VISIBLE_DEVICES='' scripts/sanitize.sh --test-only build-gpu-sanitize -j"$(nproc)" \
    --timeout 900) >"$out/sanitize-tests.log" 2>&1
  log "sanitize tests: rc=$? $(grep -E 'tests passed|tests failed' "$out/sanitize-tests.log")"
  grep -hE "runtime error|ERROR: (Address|Leak)Sanitizer|SUMMARY: " "$out/sanitize-tests.log" | sort | uniq -c | head -20 | tee -a "$out/summary.txt"
  sed -n '/The following tests FAILED/,$p' "$out/sanitize-tests.log" | tee -a "$out/summary.txt"
}

# step smoke: a short random tune of reduce at 2^25 (60 evaluations) into /tmp/smoke.db, then its stored best
step_smoke() {
  rm -f /tmp/smoke.db
  "$ktune" tune reduce --problem n=2**25 --db /tmp/smoke.db --strategy random --budget-evals 60 --json \
    >"$out/smoke.json" 2>"$out/smoke.err"
  log "smoke tune: rc=$? $(python3 -c "import json;d=json.load(open('$out/smoke.json'));print({k:d[k] for k in ('trials','by_status','wall_seconds','configs_per_second','gpu_share','best')})" 2>&1)"
  "$ktune" best reduce --problem n=2**25 --db /tmp/smoke.db 2>&1 | tee -a "$out/summary.txt"
}
