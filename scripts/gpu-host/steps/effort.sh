# shellcheck shell=bash disable=SC2154  # out, build, ktune, limit and P come from lib.sh
# How long a search takes (docs/effort.md): the effort levels against the whole space, and the
# stop at the device's measured ceiling against the same search without it.

# step effort: each job's space searched by auto at each effort level and brute-forced, an empty compile cache and a fresh database each run: wall seconds, trials, the best's time against brute force's (bench/effort/summarize_gpu.py)
# param jobs=reduce,convolution2d: the jobs (configs/JOB.toml)
# param levels=quick,default,thorough: the effort levels
step_effort() {
  local job arm dir="$out/effort" args
  mkdir -p "$dir"
  for job in ${P[jobs]//,/ }; do
    for arm in brute ${P[levels]//,/ }; do
      args=(--strategy auto --effort "$arm"); [ "$arm" = brute ] && args=(--strategy brute_force)
      rm -rf "/tmp/effort-cache-$job-$arm" "$dir/$job-$arm.db"*
      KTUNE_CACHE_DIR=/tmp/effort-cache-$job-$arm timeout -s INT -k 20 "$limit" "$ktune" tune --config "configs/$job.toml" \
        "${args[@]}" --seed 1 --db "$dir/$job-$arm.db" --json >"$dir/$job-$arm.json" 2>"$dir/$job-$arm.err"
      log "effort $job $arm: rc=$?"
    done
  done
  python3 bench/effort/summarize_gpu.py "$dir" | tee -a "$out/summary.txt"
}

# step ceiling: the device's read, copy and FMA ceilings measured and stored (bench/peers --ceilings-only --store-ceilings), then each job's random search with the stop at the ceiling and without, the same seed, a fresh database each: wall seconds, trials, the best and its fraction of the ceiling
# param jobs=reduce,copy: the jobs (configs/JOB.toml)
# param fraction=0.9: --stop-at-ceiling
# param budget=400: evaluations of each random search
step_ceiling() {
  local job arm dir="$out/ceiling" flag
  mkdir -p "$dir"
  rm -f "$dir/ceilings.db"*
  timeout -s INT -k 20 120 "$build/bench/ktune_peers" --ceilings-only --store-ceilings --db "$dir/ceilings.db" \
    --rounds 3 --samples 10 >"$dir/ceilings.txt" 2>"$dir/ceilings.err"
  log "ceiling: measured, rc=$?"; tee -a "$out/summary.txt" <"$dir/ceilings.txt"
  for job in ${P[jobs]//,/ }; do
    for arm in stop whole; do
      flag=(--stop-at-ceiling "${P[fraction]}"); [ $arm = whole ] && flag=()
      cp "$dir/ceilings.db" "$dir/$job-$arm.db"
      rm -rf "/tmp/ceiling-cache-$job-$arm"
      KTUNE_CACHE_DIR=/tmp/ceiling-cache-$job-$arm timeout -s INT -k 20 "$limit" "$ktune" tune --config "configs/$job.toml" \
        --strategy random --budget-evals "${P[budget]}" --seed 1 "${flag[@]}" --db "$dir/$job-$arm.db" --json \
        >"$dir/$job-$arm.json" 2>"$dir/$job-$arm.err"
      log "ceiling $job $arm: rc=$?"
    done
  done
  python3 bench/effort/summarize_gpu.py "$dir" | tee -a "$out/summary.txt"
}
