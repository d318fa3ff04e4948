# shellcheck shell=bash disable=SC2154  # out, build, ktune, limit and P come from lib.sh
# copy's job: its whole space verified on each side, and the start of a run on a cold and a
# warm compile cache.

# step copy-verify: copy's whole space (1 GiB buffers) tuned with the outputs checked on the GPU, then on the host, the host side cut short
# param host-budget=60: seconds of the host-checked side (about 0.2 s per configuration, 930 of them), compared by its rate
step_copy_verify() {
  local where budget
  for where in device host; do
    budget=(); [ $where = host ] && budget=(--budget-time "${P[host-budget]}")
    timeout -s INT -k 20 "$limit" "$ktune" tune copy --strategy brute_force --verify $where --db /tmp/copy-$where.db --no-reuse \
      "${budget[@]}" --json >"$out/copy-$where.json" 2>"$out/copy-$where.err"
    log "copy --verify $where: rc=$?"
  done
  python3 bench/summarize_tune.py verify-device="$out/copy-device.json" verify-host="$out/copy-host.json" \
    | tee -a "$out/summary.txt"
}

# step copy-start: copy's job (configs/copy.toml, 1 GiB buffers) with a fresh database, first on an empty compile cache (its whole space tuned), then on the warm cache: the worker's start step by step
# param warm=3: runs on the warm cache
step_copy_start() {
  local run runs=()
  rm -rf /tmp/ktune-cache-copy
  for run in cold $(seq -f 'warm-%g' 1 "${P[warm]}"); do
    KTUNE_CACHE_DIR=/tmp/ktune-cache-copy timeout -s INT -k 20 "$limit" "$ktune" tune --config configs/copy.toml \
      --db "/tmp/copy-start-$run.db" --no-reuse --json >"$out/copy-start-$run.json" 2>"$out/copy-start-$run.err"
    log "copy-start $run: rc=$?"; runs+=("$run=$out/copy-start-$run.json")
  done
  python3 bench/summarize_tune.py "${runs[@]}" | tee -a "$out/summary.txt"
}
