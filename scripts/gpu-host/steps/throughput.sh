# shellcheck shell=bash disable=SC2154  # out, build, ktune, limit and P come from lib.sh
# Throughput: ktune and Kernel Tuner on the 270-configuration space, two builds of ktune
# against each other, and the compile and client benchmarks.

# step kt270: throughput on the 270-configuration space (configs/reduce-kt270.toml) at 7, 32 and adaptive samples, an empty compile cache each run, with its timeline
# param repeats=1: runs of each sample count, interleaved; the run of the median rate stands for the count
step_kt270() {
  # Each run measures everything again, as a tuner without a cache would. The run of the
  # median rate stands for its mode (kt270-sMODE.json and its timeline), the others stay as
  # kt270-sMODE-rN.*.
  local r mode median
  for r in $(seq 1 "${P[repeats]}"); do
    for mode in 7 32 0; do
      rm -rf /tmp/ktune-cache-kt$mode
      KTUNE_CACHE_DIR=/tmp/ktune-cache-kt$mode "$ktune" tune --config configs/reduce-kt270.toml --samples $mode \
        --db /tmp/kt270.db --no-reuse --retime-top 0 --json --trace "$out/kt270-s$mode-r$r.trace.json" \
        >"$out/kt270-s$mode-r$r.json" 2>"$out/kt270-s$mode-r$r.err"
      log "kt270 samples=$mode run $r: rc=$? $(python3 -c "import json,sys;print('%.1f/s' % json.load(open(sys.argv[1]))['configs_per_second'])" "$out/kt270-s$mode-r$r.json" 2>&1)"
    done
  done
  for mode in 7 32 0; do
    median=$(median_run configs_per_second "$out"/kt270-s$mode-r*.json)
    [ -n "$median" ] || continue
    median=${median%.json}
    mv "$median.json" "$out/kt270-s$mode.json"; mv "$median.err" "$out/kt270-s$mode.err"
    mv "$median.trace.json" "$out/kt270-s$mode.trace.json" 2>/dev/null
  done
  python3 bench/summarize_tune.py samples7="$out/kt270-s7.json" samples32="$out/kt270-s32.json" \
    adaptive="$out/kt270-s0.json" | tee -a "$out/summary.txt"
  # Where each run's time went (its timeline, `tune --trace`).
  python3 bench/summarize_trace.py "$out"/kt270-s{7,32,0}.trace.json | tee -a "$out/summary.txt"
}

# step kt-peer: Kernel Tuner 1.4 on its 270-configuration space at 7 and 32 iterations; after kt270 in the same call, the two side by side with the ratio of their rates
# param repeats=1: runs of each iteration count (each in kernel-tuner-rN); the run of the median rate stands for the count in kernel-tuner/
# param peer=.peers/kernel_tuner: the folder with Kernel Tuner's run.sh (an ignored folder of the checkout, sent with it)
step_kt_peer() {
  local kt=${P[peer]} r it median
  if [ -x "$kt/run.sh" ]; then
    for r in $(seq 1 "${P[repeats]}"); do
      "$kt/run.sh" "$out/kernel-tuner-r$r" 7 32 | tee -a "$out/summary.txt"
    done
    mkdir -p "$out/kernel-tuner"
    for it in 7 32; do
      median=$(median_run configs_per_s "$out"/kernel-tuner-r*/summary_it$it.json)
      [ -n "$median" ] && cp "$median" "$out/kernel-tuner/summary_it$it.json"
    done
    # After the kt270 step of this call: each ktune run beside Kernel Tuner's, with the ratio.
    if [ -f "$out/kt270-s7.json" ] && [ -f "$out/kt270-s32.json" ]; then
      python3 bench/summarize_tune.py samples7="$out/kt270-s7.json" samples32="$out/kt270-s32.json" \
        --kernel-tuner "$out/kernel-tuner" 2>&1 | sed -n '/ktune against Kernel Tuner/,$p' | tee -a "$out/summary.txt"
    fi
  else
    log "kt-peer: no Kernel Tuner at $kt (kt-peer:peer=DIR)"
  fi
}

# step ab: a tuning job run alternately by the build of a second source tree (old) and by this one (new), a fresh database each run: each run's rate, the medians, new/old and the spread (bench/ab/compare-builds.sh)
# param base=: the old side: a source tree (built like the main build, into a folder of its own) or a built ktune; needed
# param repeats=5: runs of each side
# param samples=7: samples per configuration (0: adaptive)
# param config=configs/reduce-kt270.toml: the job file, the kt270 step's by default
# param cache=cold: both sides' compile cache: cold (emptied before every run) or warm (filled by one untimed run of each side)
check_ab() {
  local base=${P[base]}
  [ -n "$base" ] || { echo "run.sh: step ab: needs base=DIR, the source tree to compare with" >&2; return 1; }
  if [ ! -f "$base/CMakeLists.txt" ] && { [ ! -f "$base" ] || [ ! -x "$base" ]; }; then
    echo "run.sh: step ab: base=$base is neither a source tree nor a ktune binary" >&2; return 1
  fi
  [ -f "${P[config]}" ] || { echo "run.sh: step ab: config=${P[config]}: no such file" >&2; return 1; }
  case ${P[cache]} in cold|warm) ;; *) echo "run.sh: step ab: cache=${P[cache]} is neither cold nor warm" >&2; return 1 ;; esac
}
step_ab() {
  local base=${P[base]} old bdir
  if [ -f "$base/CMakeLists.txt" ]; then
    # Its own build folder beside the main one, made afresh when it last built another tree.
    base=$(cd "$base" && pwd); bdir=$build-base
    grep -qxF "CMAKE_HOME_DIRECTORY:INTERNAL=$base" "$bdir/CMakeCache.txt" 2>/dev/null || rm -rf "$bdir"
    local t0; t0=$(date +%s)
    if ! gh_build_tree "$base" "$bdir" "$out/ab-base-cmake.log" "$out/ab-base-build.log" ktune; then
      log "ab: the build of $base failed (ab-base-cmake.log, ab-base-build.log)"; return
    fi
    log "ab: base build $(( $(date +%s) - t0 )) s"
    old=$bdir/tuner/ktune
  else
    old=$(realpath "$base")
  fi
  local name=ab-s${P[samples]}
  bench/ab/compare-builds.sh --repeats "${P[repeats]}" --samples "${P[samples]}" --cache "${P[cache]}" \
    --limit "$limit" --trace --out "$out/$name" "$old" "$ktune" -- --config "${P[config]}" --no-reuse --retime-top 0 \
    >"$out/$name.txt" 2>"$out/$name.err"
  log "ab: rc=$?; old: $base, new: this tree; ${P[repeats]} runs of each at samples=${P[samples]}, ${P[cache]} compile cache"
  tee -a "$out/summary.txt" <"$out/$name.txt"
}

# step bench-compile: the compile benchmarks (bench_compile, 2 s each)
step_bench_compile() {
  "$build/bench/bench_compile" --benchmark_min_time=2 >"$out/bench-compile.log" 2>&1
  log "bench_compile: rc=$?"; grep -E "^BM_" "$out/bench-compile.log" | tee -a "$out/summary.txt"
}

# step client-bench: the client's GPU benchmarks (bench_client, 1 s each)
step_client_bench() {
  "$build/bench/bench_client" --benchmark_filter=Gpu --benchmark_min_time=1 >"$out/bench-client.log" 2>&1
  log "bench_client: rc=$?"; grep -E "^BM_" "$out/bench-client.log" | tee -a "$out/summary.txt"
}

# step cutoff: each built-in kernel's job (configs/*.toml) as a random search, the same seed with the early cut-off and without (--no-cutoff), an empty compile cache each run: best, its time, cut trials, GPU and wall seconds; then configs/reduce-kt270.toml brute-forced both ways (rates); a table to summary.txt
# param budget=40: evaluations of each job's random search
# param samples=32: samples per configuration (0: adaptive)
step_cutoff() {
  local job name arm flag dir="$out/cutoff"
  mkdir -p "$dir"
  for job in configs/*.toml; do
    name=$(basename "$job" .toml)
    for arm in cut whole; do
      flag=(); [ $arm = whole ] && flag=(--no-cutoff)
      rm -rf "/tmp/cutoff-cache-$name-$arm" "$dir/$name-$arm.db"*
      KTUNE_CACHE_DIR=/tmp/cutoff-cache-$name-$arm timeout -s INT -k 20 "$limit" "$ktune" tune --config "$job" \
        --strategy random --budget-evals "${P[budget]}" --samples "${P[samples]}" --seed 1 "${flag[@]}" \
        --db "$dir/$name-$arm.db" --json >"$dir/$name-$arm.json" 2>"$dir/$name-$arm.err"
      log "cutoff $name $arm: rc=$?"
    done
  done
  for arm in cut whole; do
    flag=(); [ $arm = whole ] && flag=(--no-cutoff)
    rm -rf "/tmp/cutoff-cache-kt270-$arm" "$dir/kt270-$arm.db"*
    KTUNE_CACHE_DIR=/tmp/cutoff-cache-kt270-$arm "$ktune" tune --config configs/reduce-kt270.toml --samples 32 \
      --retime-top 0 "${flag[@]}" --db "$dir/kt270-$arm.db" --json >"$dir/kt270-$arm.json" 2>"$dir/kt270-$arm.err"
    log "cutoff kt270 $arm: rc=$?"
  done
  python3 bench/cutoff/compare.py "$dir" | tee -a "$out/summary.txt"
}
