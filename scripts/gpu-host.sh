#!/usr/bin/env bash
# Builds ktune on the GPU host and runs what needs a GPU, writing logs under OUT_DIR.
# usage: scripts/gpu-host.sh KIT_DIR OUT_DIR [steps...]
#   KIT_DIR: the build dependencies for a host without a package manager, with a setup.sh that
#   unpacks them under the prefix it is given ($KTUNE_DEPS_PREFIX, default $TMPDIR/ktune-deps)
#   and exports the search paths (CMAKE_PREFIX_PATH, CPATH, LD_LIBRARY_PATH, Python3_EXECUTABLE).
#   It must hold every build dependency of scripts/install-deps.sh that the host lacks, the
#   header-only ones included (libxxhash-dev: without it CMake stops at XXHASH_INCLUDE_DIR).
#   steps (after the build, which always runs): test (GPU tests), cpu-test, sanitize-build and
#   sanitize-test (the CPU suite under ASan+UBSan, GPU hidden), smoke (short tune),
#   bench-compile, client-bench, kt270 (throughput on a 270-config space), brute (the whole
#   reduce space at 2^20, 2^22, 2^25 and 2^28, the last two exported as recordings), tune-peers
#   (tune the kernels of the peer table, $KTUNE_PEER_JOBS), peers (bench/peers on their stored
#   bests, with the measured ceilings, $KTUNE_PEER_ONLY), table (the whole peer table from one
#   call: every kernel of it tuned, time-boxed by $KTUNE_TABLE_BUDGET, then peers), hopper-limits (the TF32 tensor-core
#   peak and the L2 read bandwidth), recordings (brute-force the small spaces and export them), example (the client example on
#   the smoke step's database), compile-ab (the kt270 space with each compile-side change
#   switched off in turn; $KTUNE_AB_VARIANTS names them, a variant named twice runs twice,
#   $KTUNE_AB_SAMPLES the samples, default 32), copy-verify (copy's whole space, outputs checked on the GPU and on the
#   host, the host side cut at $KTUNE_COPY_HOST_BUDGET seconds), copy-start (copy's job, cold then warm compile cache, uploads staged and plain), kt-peer (Kernel Tuner 1.4 on its 270-configuration space, from $KTUNE_KT_PEER; after kt270 in the same call, the two side by side with the ratio of their rates; $KTUNE_KT270_REPEATS and $KTUNE_KT_REPEATS run each side that many times, the median run counting),
#   histogram (the out-of-tree example plugin built against the installed package and tuned),
#   orphans (SIGKILL of a real `ktune tune`: no worker or compile process left, then a resume),
#   scale-out (bench/scale_out.sh: 1, 2, 4 workers on one study, 20 ms per trial; trials and
#   storages from $KTUNE_SCALE_TRIALS and $KTUNE_SCALE_STORAGES),
#   two-gpu (bench/two_gpu.sh: `--devices all` against one device, a shared journal study of two
#   processes then merged, a worker killed; $KTUNE_TWO_GPU_STEPS names a subset),
#   kt-examples (Kernel Tuner's vector_add, reduction and matmul examples run by Kernel Tuner and,
#   with the import line changed, by the ktune Python package; $KTUNE_KT_EXAMPLES names a subset,
#   $KTUNE_KT_RUNNERS "kernel_tuner" or "ktune" one of the two)
# A step starts only while less than $KTUNE_GPU_DEADLINE seconds (default 540) have passed, and
# each tuning run is cut at $KTUNE_GPU_STEP_LIMIT seconds (default 150), so one slow or hanging
# kernel costs its step, not the logs of the others. The build goes to $KTUNE_GPU_BUILD
# (default build-gpu, ignored by git, kept between calls on a warm host).
set -uo pipefail
kit=${1:?kit dir}; out=${2:?out dir}; shift 2
steps=${*:-build test}
mkdir -p "$out"
# shellcheck disable=SC1091
# The prefix is passed explicitly: without one, setup.sh would take this script's arguments.
source "$kit/setup.sh" "${KTUNE_DEPS_PREFIX:-${TMPDIR:-/tmp}/ktune-deps}" >/dev/null
# The kit's Python packages (Optuna, SQLAlchemy, ...) arrive without byte code: compiled once
# here, instead of by every process that imports them (about a second of each Optuna start).
python3 -m compileall -q -j 0 "$GPU_KIT_PREFIX/usr/lib/python3/dist-packages" >/dev/null 2>&1 || true
export KTUNE_CACHE_DIR=${KTUNE_CACHE_DIR:-/tmp/ktune-cache}
build=${KTUNE_GPU_BUILD:-build-gpu}
limit=${KTUNE_GPU_STEP_LIMIT:-150}
log() { echo "== $*" | tee -a "$out/summary.txt"; }

log "host: $(nproc) cores, $(nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader 2>&1)"
start=$(date +%s)
cmake -S . -B $build -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE="$Python3_EXECUTABLE" \
  >"$out/cmake.log" 2>&1 || { tail -30 "$out/cmake.log"; exit 1; }
ninja -C $build >"$out/build.log" 2>&1 || { grep -E "error|FAILED" "$out/build.log" | head -40; exit 1; }
log "build: $(( $(date +%s) - start )) s"
ktune=$build/tuner/ktune
$ktune devices | tee -a "$out/summary.txt"

deadline=${KTUNE_GPU_DEADLINE:-540}
# One database for the brute-force, peer-tuning and peer steps, so the peer table finds every
# kernel's stored best, also across calls on a warm host.
db=/tmp/ktune-gpu.db
mkdir -p "$out/recordings"
export_rec() {  # export_rec KERNEL DB PROBLEM...: the database's trials as a shipped recording
  local k=$1 db=$2 said; shift 2
  said=$($ktune export "$k" --db "$db" --kt-cache "$out/recordings/" "$@" 2>&1) || log "export $k failed: $said"
  echo "$said" >>"$out/export.log"
}
tune_job() {  # tune_job LABEL ARGS...: `ktune tune ARGS` into the shared database, cut at $limit
  local label=$1; shift
  timeout -s INT -k 20 $limit $ktune tune "$@" --db $db --json >"$out/tune-$label.json" 2>"$out/tune-$label.err"
  log "tune $label: rc=$? $(python3 bench/summarize_tune.py $label="$out/tune-$label.json" 2>&1 | tail -1)"
}
median_run() {  # median_run KEY FILE...: of the JSON files (timelines left out), the one whose KEY is the median
  python3 -c "
import json, sys
runs = [f for f in sys.argv[2:] if not f.endswith('.trace.json')]
runs.sort(key=lambda f: json.load(open(f)).get(sys.argv[1], 0))
print(runs[len(runs) // 2] if runs else '')" "$@" 2>/dev/null
}
run_peers() {  # run_peers SECONDS ARGS...: bench/peers on the shared database's bests
  local seconds=$1; shift
  timeout -s INT -k 20 $seconds $build/bench/ktune_peers --db $db --json "$out/peers.json" "$@" \
    >"$out/peers.txt" 2>"$out/peers.err"
  log "peers: rc=$?"; cat "$out/peers.txt" | tee -a "$out/summary.txt"
  cp $db "$out/peers.db"
}
for step in $steps; do
  if (( $(date +%s) - start > deadline )); then log "skipped $step: past ${deadline} s"; continue; fi
  case $step in
    test)
      # The GPU tests, and the Python package's (its GPU tests skip without a device): 228 s
      # for 39 tests on an H200 (2026-11-28), one at a time (timing tests must not share the GPU).
      (cd $build && timeout -k 10 400 ctest -L 'gpu|python' --output-on-failure --timeout 150) >"$out/gpu-tests.log" 2>&1
      log "gpu tests: rc=$? $(grep -E 'tests passed|tests failed' "$out/gpu-tests.log")"
      grep -E "^\s+(fault|block)=|Failure|Expected|error" "$out/gpu-tests.log" | head -40 ;;
    cpu-test)
      (cd $build && ctest -LE gpu -j16 --timeout 600 --output-on-failure) >"$out/cpu-tests.log" 2>&1
      log "cpu tests: rc=$? $(grep -E 'tests passed|tests failed' "$out/cpu-tests.log")"
      sed -n '/The following tests FAILED/,$p' "$out/cpu-tests.log" | tee -a "$out/summary.txt" ;;
    sanitize-build)
      # The CPU suite's ASan+UBSan build (scripts/sanitize.sh), on this host's cores.
      KTUNE_SANITIZE_JOBS=$(nproc) scripts/sanitize.sh --build-only build-gpu-sanitize \
        >"$out/sanitize-build.log" 2>&1
      log "sanitize build: rc=$? $(grep -cE 'runtime error|ERROR: AddressSanitizer' "$out/sanitize-build.log") reports" ;;
    sanitize-test)
      # That build's CPU suite, with the GPU hidden as on a machine without one.
      (CUDA_VISIBLE_DEVICES= scripts/sanitize.sh --test-only build-gpu-sanitize -j"$(nproc)" \
        --timeout 900) >"$out/sanitize-tests.log" 2>&1
      log "sanitize tests: rc=$? $(grep -E 'tests passed|tests failed' "$out/sanitize-tests.log")"
      grep -hE "runtime error|ERROR: (Address|Leak)Sanitizer|SUMMARY: " "$out/sanitize-tests.log" | sort | uniq -c | head -20 | tee -a "$out/summary.txt"
      sed -n '/The following tests FAILED/,$p' "$out/sanitize-tests.log" | tee -a "$out/summary.txt" ;;
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
      # measuring everything again, as a tuner without a cache would. $KTUNE_KT270_REPEATS runs of
      # each mode (default 1), interleaved; the run of the median rate stands for the mode
      # (kt270-sMODE.json and its timeline), the others stay as kt270-sMODE-rN.*.
      repeats=${KTUNE_KT270_REPEATS:-1}
      for r in $(seq 1 "$repeats"); do
        for mode in 7 32 0; do
          export KTUNE_CACHE_DIR=/tmp/ktune-cache-kt$mode; rm -rf $KTUNE_CACHE_DIR
          $ktune tune --config configs/reduce-kt270.toml --samples $mode --db /tmp/kt270.db --no-reuse \
            --retime-top 0 --json --trace "$out/kt270-s$mode-r$r.trace.json" \
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
      export KTUNE_CACHE_DIR=/tmp/ktune-cache
      python3 bench/summarize_tune.py samples7="$out/kt270-s7.json" samples32="$out/kt270-s32.json" \
        adaptive="$out/kt270-s0.json" | tee -a "$out/summary.txt"
      # Where each run's time went (its timeline, `tune --trace`).
      python3 bench/summarize_trace.py "$out"/kt270-s{7,32,0}.trace.json | tee -a "$out/summary.txt" ;;
    compile-ab)
      # What each compile-side change gives: the kt270 space at 32 samples, cold compile cache,
      # with everything on, then with one change switched off, then with all off (as before);
      # no-reorder: brute force measured in the queue's order instead of as compilations finish;
      # batchN: at most N configurations per NVRTC program (16 by default); no-nice: compile
      # processes at the tuner's priority instead of below it; niceN: at nice N; no-keep-heap:
      # compile processes with glibc's default heap trimming (NVRTC's memory faulted in afresh
      # for every program); idle: compile processes under SCHED_IDLE; nvrtc-compare: the GPU
      # worker compiles its comparison kernels with NVRTC instead of taking the build's;
      # threadsN: N compile processes (the default is one per core, less one); no-early-worker:
      # the GPU worker starts when the run begins instead of beside the tuner's device query;
      # no-early-compile: the compile processes start after the database instead of before the
      # device query.
      # $KTUNE_AB_CONFIG runs another job file instead of kt270's.
      runs=(); i=0
      for variant in ${KTUNE_AB_VARIANTS:-on no-minimal no-warmup no-reorder no-nice off}; do
        extra_args=()
        case $variant in
          on) env_set=() ;; threads[0-9]*) env_set=(); extra_args=(--compile-threads ${variant#threads}) ;; no-minimal) env_set=(KTUNE_NVRTC_MINIMAL=0) ;;
          no-warmup) env_set=(KTUNE_COMPILE_WARMUP=0) ;; no-reorder) env_set=(KTUNE_OUT_OF_ORDER=0) ;;
          batch[0-9]*) env_set=(KTUNE_COMPILE_BATCH=${variant#batch}) ;;
          no-nice) env_set=(KTUNE_COMPILE_NICE=0) ;; nice[0-9]*) env_set=(KTUNE_COMPILE_NICE=${variant#nice}) ;;
          no-keep-heap) env_set=(KTUNE_COMPILE_KEEP_HEAP=0) ;;
          idle) env_set=(KTUNE_COMPILE_SCHED=idle) ;;
          nvrtc-compare) env_set=(KTUNE_COMPARE_EMBEDDED=0) ;; no-early-worker) env_set=(KTUNE_WORKER_EARLY=0) ;;
          no-early-compile) env_set=(KTUNE_COMPILE_EARLY=0) ;;
          off) env_set=(KTUNE_NVRTC_MINIMAL=0 KTUNE_COMPILE_WARMUP=0 KTUNE_OUT_OF_ORDER=0 KTUNE_COMPILE_NICE=0
                        KTUNE_COMPILE_KEEP_HEAP=0) ;;
          *) log "compile-ab: unknown variant $variant"; continue ;;
        esac
        i=$((i + 1)); rm -rf /tmp/ktune-cache-ab
        env "${env_set[@]}" KTUNE_CACHE_DIR=/tmp/ktune-cache-ab $ktune tune --config ${KTUNE_AB_CONFIG:-configs/reduce-kt270.toml} \
          --samples ${KTUNE_AB_SAMPLES:-32} --db /tmp/kt270-ab-$i.db --no-reuse --retime-top 0 --json \
          --trace "$out/ab-$i-$variant.trace.json" "${extra_args[@]}" >"$out/ab-$i-$variant.json" 2>"$out/ab-$i-$variant.err"
        log "compile-ab $variant: rc=$? $(python3 bench/summarize_trace.py "$out/ab-$i-$variant.trace.json" | grep -E 'NVRTC|idle after' | tr -s ' ' | tr '\n' ';')"
        runs+=("$i-$variant=$out/ab-$i-$variant.json")
      done
      python3 bench/summarize_tune.py "${runs[@]}" | tee -a "$out/summary.txt" ;;
    copy-verify)
      # Tuning copy's whole space (1 GiB buffers), outputs checked on the GPU and on the host.
      # The host check takes about 0.2 s per configuration (930 of them): that side is cut at
      # $KTUNE_COPY_HOST_BUDGET seconds (default 60) and compared by its rate.
      for where in device host; do
        budget=(); [ $where = host ] && budget=(--budget-time ${KTUNE_COPY_HOST_BUDGET:-60})
        timeout -s INT -k 20 $limit $ktune tune copy --verify $where --db /tmp/copy-$where.db --no-reuse \
          "${budget[@]}" --json >"$out/copy-$where.json" 2>"$out/copy-$where.err"
        log "copy --verify $where: rc=$?"
      done
      python3 bench/summarize_tune.py verify-device="$out/copy-device.json" verify-host="$out/copy-host.json" \
        | tee -a "$out/summary.txt" ;;
    copy-start)
      # copy's job (configs/copy.toml, 1 GiB buffers) with a fresh database: first with an empty
      # compile cache (the figure of tuning its whole space), then three pairs on the warm cache,
      # as built and with $KTUNE_START_OFF set (default KTUNE_STAGED_UPLOAD=0: uploads as plain
      # cudaMemcpy), alternating: the worker's start step by step.
      export KTUNE_CACHE_DIR=/tmp/ktune-cache-copy; rm -rf $KTUNE_CACHE_DIR
      runs=()
      for run in cold 1-on 1-off 2-on 2-off 3-on 3-off; do
        env_set=(KTUNE_UNUSED=0); [ "${run#*-}" = off ] && env_set=(${KTUNE_START_OFF:-KTUNE_STAGED_UPLOAD=0})
        env "${env_set[@]}" timeout -s INT -k 20 $limit $ktune tune --config configs/copy.toml \
          --db /tmp/copy-start-$run.db --no-reuse --json >"$out/copy-start-$run.json" 2>"$out/copy-start-$run.err"
        log "copy-start $run: rc=$?"; runs+=("$run=$out/copy-start-$run.json")
      done
      export KTUNE_CACHE_DIR=/tmp/ktune-cache
      python3 bench/summarize_tune.py "${runs[@]}" | tee -a "$out/summary.txt" ;;
    kt-examples)
      # Each example twice in this call: as written (Kernel Tuner), then with its import line
      # changed at run time (`from ktune import tune_kernel`, `import ktune as kernel_tuner`);
      # the best configuration each prints and its wall time.
      kt=$(cd "${KTUNE_KT_PEER:-.peers/kernel_tuner}" 2>/dev/null && pwd)
      if [ -z "$kt" ] || [ ! -d "$kt/examples" ]; then
        log "kt-examples: no Kernel Tuner examples at ${KTUNE_KT_PEER:-.peers/kernel_tuner}"; continue
      fi
      ex=$(mktemp -d); cp "$kt"/examples/* "$ex/"
      pypath="$PWD/$build/python:$kt/site"
      for name in ${KTUNE_KT_EXAMPLES:-vector_add reduction matmul}; do
        sed -e 's/^from kernel_tuner import tune_kernel$/from ktune import tune_kernel/' \
          -e 's/^import kernel_tuner$/import ktune as kernel_tuner/' "$ex/$name.py" >"$ex/${name}_ktune.py"
        variants=""
        for runner in ${KTUNE_KT_RUNNERS:-kernel_tuner ktune}; do
          case $runner in kernel_tuner) variants+=" $name" ;; ktune) variants+=" ${name}_ktune" ;; esac
        done
        for variant in $variants; do
          t0=$(date +%s.%N)
          (cd "$ex" && timeout -s INT -k 20 $limit env PYTHONPATH="$pypath" KTUNE_DB=$db PYTHONUNBUFFERED=1 \
            python3 "$variant.py" >"$out/kt-$variant.log" 2>&1)
          rc=$?
          wall=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$t0" "$(date +%s.%N)")
          best=$(grep -i -A1 "best performing config" "$out/kt-$variant.log" | grep -v -i "best performing" | tail -1)
          log "kt-examples $variant: rc=$rc wall ${wall} s; best: ${best:-none} $( [ $rc -ne 0 ] && tail -1 "$out/kt-$variant.log")"
        done
      done
      rm -rf "$ex" ;;
    kt-peer)
      # Kernel Tuner 1.4 on its 270-configuration reduction, in this call: $KTUNE_KT_PEER is the
      # folder with its run.sh (copied into an ignored folder of the checkout, which travels).
      # $KTUNE_KT_REPEATS runs of each iteration count (default 1, each in kernel-tuner-rN); the
      # run of the median rate stands for the count in kernel-tuner/, as kt270 does for ktune.
      kt=${KTUNE_KT_PEER:-.peers/kernel_tuner}
      if [ -x "$kt/run.sh" ]; then
        for r in $(seq 1 "${KTUNE_KT_REPEATS:-1}"); do
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
        log "kt-peer: no Kernel Tuner at $kt (set KTUNE_KT_PEER)"
      fi ;;
    brute)
      # The whole reduction space at each size of the peer table (2^20, 2^22, 2^25, 2^28; or
      # $KTUNE_REDUCE_SIZES, powers of two), default (adaptive) measurement.
      for n in ${KTUNE_REDUCE_SIZES:-20 22 25 28}; do
        $ktune space reduce --problem n=2**$n --json --sample 0 >"$out/space-2_$n.json"
        timeout -s INT -k 20 $limit $ktune tune reduce --problem n=2**$n --db $db --json >"$out/brute-2_$n.json" \
          2>"$out/brute-2_$n.err"
        log "brute 2^$n: rc=$? $(python3 -c "import json;d=json.load(open('$out/space-2_$n.json'));print('cartesian',d['cartesian'],'valid',d['valid'])")"
      done
      python3 bench/summarize_tune.py b25="$out/brute-2_25.json" b28="$out/brute-2_28.json" \
        --db $db --variants n=33554432 | tee -a "$out/summary.txt"
      export_rec reduce $db --problem n=2**28
      export_rec reduce $db --problem n=2**25 ;;
    client-bench)
      $build/bench/bench_client --benchmark_filter=Gpu --benchmark_min_time=1 >"$out/bench-client.log" 2>&1
      log "bench_client: rc=$?"; grep -E "^BM_" "$out/bench-client.log" | tee -a "$out/summary.txt" ;;
    tune-peers)
      # Tune each kernel of the peer table at the table's size ($KTUNE_PEER_JOBS, default all
      # but reduce, whose bests come from the brute step).
      for job in ${KTUNE_PEER_JOBS:-copy transpose stencil3d convolution2d matmul matmul_tf32 matmul_tf32_wgmma matmul_tf32_tma}; do
        tune_job $job --config configs/$job.toml --samples 7 --budget-time $((limit - 30))
      done ;;
    table)
      # The whole peer table from one call and a fresh database: reduce at 2^25 and 2^28 by a
      # random search of $KTUNE_TABLE_BUDGET seconds (default 25), copy, transpose, stencil3d and
      # matmul_tf32_tma whole (tma's brute force cut at 25 s measured 852 of its 1,317 and missed
      # its best), the other kernels of the table for that long each; then bench/peers on all
      # of it (on an H200 about 420 s after the build, which takes 60-110 s).
      budget=${KTUNE_TABLE_BUDGET:-25}
      rm -f $db $db-wal $db-shm
      for n in 25 28; do
        tune_job reduce-2_$n reduce --problem n=2**$n --strategy random --budget-time $budget
      done
      for job in copy transpose stencil3d convolution2d matmul matmul_tf32 matmul_tf32_wgmma matmul_tf32_tma; do
        whole=(); case $job in copy|transpose|stencil3d|matmul_tf32_tma) ;; *) whole=(--budget-time $budget) ;; esac
        tune_job $job --config configs/$job.toml --samples 7 "${whole[@]}"
      done
      run_peers 400 ;;
    hopper-limits)
      # The TF32 tensor-core peak and the L2 read bandwidth (bench/hopper/limits.cu).
      $build/bench/ktune_hopper_limits >"$out/hopper-limits.txt" 2>&1
      log "hopper-limits: rc=$?"; cat "$out/hopper-limits.txt" | tee -a "$out/summary.txt" ;;
    peers)
      # Time the stored bests beside cudaMemcpy, CUB and cuBLAS (bench/peers/README.md);
      # reduce's bests come from the brute step.
      only=()
      [ -n "${KTUNE_PEER_ONLY:-}" ] && only=(--only "$KTUNE_PEER_ONLY")
      run_peers $limit "${only[@]}"
      # The recordings of the kernels tuned here (reduce's come from the brute step).
      for job in ${KTUNE_PEER_JOBS:-copy transpose stencil3d convolution2d}; do
        [ "$job" = matmul ] || export_rec $job $db
      done ;;
    histogram)
      # The out-of-tree histogram plugin (examples/histogram) built against the installed
      # package, checked, then tuned on skewed generated bytes, on a text file (.npy, with its
      # expected histogram) and on a Zipf distribution.
      prefix=/tmp/ktune-prefix
      cmake --install $build --prefix $prefix >"$out/histogram.log" 2>&1 &&
        cmake -S examples/histogram -B /tmp/build-histogram -G Ninja -DCMAKE_PREFIX_PATH=$prefix \
          >>"$out/histogram.log" 2>&1 && cmake --build /tmp/build-histogram >>"$out/histogram.log" 2>&1
      log "histogram build: rc=$?"
      plugin=/tmp/build-histogram/libhistogram.so
      $ktune check histogram --plugin $plugin --config examples/histogram/skewed.toml \
        2>&1 | tee -a "$out/summary.txt"
      for job in skewed text zipf; do
        case $job in
          zipf) args=(histogram --input 'data=zipf(1.2,256)' --problem n=67108864 --budget-evals 200) ;;
          *) args=(--config examples/histogram/$job.toml) ;;
        esac
        timeout -s INT -k 20 $limit $ktune tune "${args[@]}" --plugin $plugin --db /tmp/histogram.db \
          --samples 7 --json >"$out/histogram-$job.json" 2>"$out/histogram-$job.err"
        log "histogram $job: rc=$? $(python3 bench/summarize_tune.py $job="$out/histogram-$job.json" 2>&1 | tail -1)"
      done ;;
    example)
      # The client example (examples/), built against the installed package as its test does,
      # run on the smoke step's database: the tuned problem, then one that was not tuned.
      (cd $build && ctest -R ktune_client_example_find_package --output-on-failure) >"$out/example.log" 2>&1
      log "example build: rc=$?"
      ex=$build/tests/client-example-find-package/build/reduce_client
      for n in 33554432 30000001; do
        $ex /tmp/smoke.db $n /tmp/ktune-client-cache >>"$out/example.log" 2>&1
        log "example n=$n: rc=$? $(tail -3 "$out/example.log" | tr '\n' ' ')"
      done ;;
    recordings)
      # The small spaces whole, at their default problem sizes, as shipped recordings.
      rdb=/tmp/rec.db
      for job in soa_aos streams reduce_f32; do
        timeout -s INT -k 20 $limit $ktune tune --config configs/$job.toml --db $rdb --json >"$out/tune-$job.json" \
          2>"$out/tune-$job.err"
        log "tune $job: rc=$? $(python3 bench/summarize_tune.py $job="$out/tune-$job.json" 2>&1 | tail -1)"
        export_rec $job $rdb
      done ;;
    orphans)
      # SIGKILL of `ktune tune` (the process alone, not its group) during a real run: none of
      # its GPU worker or compile processes may outlive it, and the next run resumes: what the
      # killed run stored is answered from the database.
      odb=/tmp/orphans.db; rm -f $odb $odb-wal $odb-shm
      otune=($ktune tune reduce --problem n=2**25 --db $odb --strategy random --seed 3 --budget-evals 300 --progress never)
      "${otune[@]}" >"$out/orphans-killed.log" 2>&1 &
      opid=$!
      stored() { python3 -c "import sqlite3,sys;print(sqlite3.connect('file:$odb?mode=ro',uri=True).execute('select count(*) from trials').fetchone()[0])" 2>/dev/null || echo 0; }
      for _ in $(seq 120); do sleep 1; (( $(stored) >= 30 )) && break; done
      kids=$(ps -eo pid=,ppid=,args= | awk -v p=$opid '$2==p {print $1}' | tr '\n' ' ')
      before=$(stored)
      kill -9 $opid; wait $opid 2>/dev/null
      sleep 5
      left=$(for k in $kids; do ps -p $k -o pid=,args= ; done)
      strays=$(ps -eo pid=,args= | grep -E "ktune (__worker|__compile)" | grep -v grep)
      log "orphans: killed ktune tune (pid $opid) after $before stored trials; children then: ${kids:-none}; alive 5 s later: ${left:-none}; ktune __worker/__compile processes: ${strays:-none}"
      timeout -s INT -k 20 $limit "${otune[@]}" --json >"$out/orphans-resume.json" 2>"$out/orphans-resume.err"
      log "orphans resume: rc=$? $(python3 -c "import json;d=json.load(open('$out/orphans-resume.json'));print({k:d[k] for k in ('status','trials','measured','from_database')})" 2>&1) (from_database should be >= $before)"
      python3 -c "import sqlite3;print('runs:', sqlite3.connect('$odb').execute('select id,status from runs').fetchall())" | tee -a "$out/summary.txt" ;;
    scale-out)
      # The scaling figure of a shared study (docs/scale-out.md#scaling): 1, 2, 4 replay
      # workers, 20 ms per trial, on a journal (and on /dev/shm, without the fsyncs).
      # What one worker's start costs: importing Optuna, and a whole one-trial run.
      log "scale-out: $(python3 -X importtime -c 'import optuna' 2>&1 | tail -1 | awk -F'|' '{printf "import optuna %.2f s", $2 / 1e6}')"
      t0=$(date +%s.%N)
      $ktune tune --replay db/recordings/cn_pnpoly-NVIDIA_GeForce_RTX_3060_Laptop_GPU-problem_size=20000000.json.gz \
        --strategy optuna:random --budget-evals 1 --retime-top 0 --db /tmp/scale-start.db -q 2>/dev/null
      log "scale-out: a one-trial optuna:random run takes $(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$t0" "$(date +%s.%N)") s"
      for storage in ${KTUNE_SCALE_STORAGES:-journal journal:/dev/shm}; do
        timeout -k 10 300 bench/scale_out.sh $ktune $storage ${KTUNE_SCALE_TRIALS:-800} 20 >>"$out/scale-out.txt" 2>&1
        log "scale-out $storage: rc=$? $(grep -E '^ +[124] ' "$out/scale-out.txt" | tail -3 | tr -s ' ' | paste -sd'|')"
      done ;;
    two-gpu)
      # Two GPUs of this host (bench/two_gpu.sh): --devices all against one device, two
      # processes on one journal study then merged, a worker killed mid-run.
      timeout -k 10 $((deadline - ($(date +%s) - start) + 30)) bench/two_gpu.sh $ktune "$out/two-gpu" \
        ${KTUNE_TWO_GPU_STEPS:-} >"$out/two-gpu.log" 2>&1
      log "two-gpu: rc=$?"; cat "$out/two-gpu/two-gpu.txt" | tee -a "$out/summary.txt"
      tar czf "$out/two-gpu.tgz" -C "$out" two-gpu && rm -rf "$out/two-gpu" ;;
    *) log "unknown step $step" ;;
  esac
done
