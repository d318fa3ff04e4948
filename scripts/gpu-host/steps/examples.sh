# shellcheck shell=bash disable=SC2154  # out, build, ktune and limit come from lib.sh
# The examples built against the installed package: the out-of-tree histogram plugin and the
# client example.

# step histogram: the out-of-tree histogram plugin (examples/histogram) built against the installed package, checked, then tuned on skewed bytes, a text file and a Zipf distribution
step_histogram() {
  local prefix=/tmp/ktune-prefix plugin job args
  cmake --install "$build" --prefix $prefix >"$out/histogram.log" 2>&1 &&
    cmake -S examples/histogram -B /tmp/build-histogram -G Ninja -DCMAKE_PREFIX_PATH=$prefix \
      >>"$out/histogram.log" 2>&1 && cmake --build /tmp/build-histogram >>"$out/histogram.log" 2>&1
  log "histogram build: rc=$?"
  plugin=/tmp/build-histogram/libhistogram.so
  "$ktune" check histogram --plugin $plugin --config examples/histogram/skewed.toml \
    2>&1 | tee -a "$out/summary.txt"
  for job in skewed text zipf; do
    case $job in
      zipf) args=(histogram --input 'data=zipf(1.2,256)' --problem n=67108864 --budget-evals 200) ;;
      *) args=(--config "examples/histogram/$job.toml") ;;
    esac
    timeout -s INT -k 20 "$limit" "$ktune" tune "${args[@]}" --plugin $plugin --db /tmp/histogram.db \
      --samples 7 --json >"$out/histogram-$job.json" 2>"$out/histogram-$job.err"
    log "histogram $job: rc=$? $(python3 bench/summarize_tune.py "$job=$out/histogram-$job.json" 2>&1 | tail -1)"
  done
}

# step example: the client example (examples/) built against the installed package as its test does, run on the smoke step's database: the tuned size, then one not tuned
step_example() {
  local ex n
  (cd "$build" && ctest -R ktune_client_example_find_package --output-on-failure) >"$out/example.log" 2>&1
  log "example build: rc=$?"
  ex=$build/tests/client-example-find-package/build/reduce_client
  for n in 33554432 30000001; do
    "$ex" /tmp/smoke.db $n /tmp/ktune-client-cache >>"$out/example.log" 2>&1
    log "example n=$n: rc=$? $(tail -3 "$out/example.log" | tr '\n' ' ')"
  done
}
