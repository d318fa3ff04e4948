# shellcheck shell=bash disable=SC2154  # out, ktune, limit, deadline, start and P come from lib.sh
# Many processes on one study: the scaling of a shared study, two GPUs of one host, and what
# a killed run leaves behind.

# step scale-out: 1, 2 and 4 replay workers on one shared study, 20 ms per trial, on each storage (bench/scale_out.sh), after what one worker's start costs
# param trials=800: trials in all, split between the workers
# param storages=journal,journal:/dev/shm: the storages (bench/scale_out.sh's STORAGE); /dev/shm leaves the fsyncs out
step_scale_out() {
  # The scaling figure of a shared study (docs/scale-out.md#scaling). What one worker's start
  # costs: importing Optuna, and a whole one-trial run.
  local t0 storage
  log "scale-out: $(python3 -X importtime -c 'import optuna' 2>&1 | tail -1 | awk -F'|' '{printf "import optuna %.2f s", $2 / 1e6}')"
  t0=$(date +%s.%N)
  "$ktune" tune --replay db/recordings/cn_pnpoly-NVIDIA_GeForce_RTX_3060_Laptop_GPU-problem_size=20000000.json.gz \
    --strategy optuna:random --budget-evals 1 --retime-top 0 --db /tmp/scale-start.db -q 2>/dev/null
  log "scale-out: a one-trial optuna:random run takes $(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$t0" "$(date +%s.%N)") s"
  for storage in ${P[storages]//,/ }; do
    timeout -k 10 300 bench/scale_out.sh "$ktune" "$storage" "${P[trials]}" 20 >>"$out/scale-out.txt" 2>&1
    log "scale-out $storage: rc=$? $(grep -E '^ +[124] ' "$out/scale-out.txt" | tail -3 | tr -s ' ' | paste -sd'|')"
  done
}

# step two-gpu: two GPUs of this host (bench/two_gpu.sh): --devices all against one device, two processes on one journal study then merged, a worker killed mid-run
# param steps=: bench/two_gpu.sh's steps (reduce, matmul, shared, kill); every one by default
# param matmul-evals=: evaluations of the matmul step's random search (its KTUNE_MATMUL_EVALS); bench/two_gpu.sh's default when empty
# param shared-evals=: evaluations per process of the shared study (its KTUNE_SHARED_EVALS); bench/two_gpu.sh's default when empty
step_two_gpu() {
  # Cut at the call's deadline, and 30 s more.
  local env_set=()
  [ -n "${P[matmul-evals]}" ] && env_set+=("KTUNE_MATMUL_EVALS=${P[matmul-evals]}")
  [ -n "${P[shared-evals]}" ] && env_set+=("KTUNE_SHARED_EVALS=${P[shared-evals]}")
  # shellcheck disable=SC2086  # the steps, one word each
  env "${env_set[@]}" timeout -k 10 $((deadline - ($(date +%s) - start) + 30)) bench/two_gpu.sh "$ktune" "$out/two-gpu" \
    ${P[steps]//,/ } >"$out/two-gpu.log" 2>&1
  log "two-gpu: rc=$?"; tee -a "$out/summary.txt" <"$out/two-gpu/two-gpu.txt"
  tar czf "$out/two-gpu.tgz" -C "$out" two-gpu && rm -rf "$out/two-gpu"
}
check_two_gpu() {
  local key
  for key in matmul-evals shared-evals; do
    [[ -z ${P[$key]} || ${P[$key]} =~ ^[0-9]+$ ]] ||
      { echo "run.sh: step two-gpu: $key=${P[$key]} is not a whole number" >&2; return 1; }
  done
}

# step orphans: SIGKILL of a real `ktune tune` (the process alone, not its group): none of its GPU worker or compile processes outlives it, and the next run resumes from what it stored
step_orphans() {
  local odb=/tmp/orphans.db otune opid kids before left strays
  rm -f $odb $odb-wal $odb-shm
  otune=("$ktune" tune reduce --problem "n=2**25" --db "$odb" --strategy random --seed 3 --budget-evals 300 --progress never)
  "${otune[@]}" >"$out/orphans-killed.log" 2>&1 &
  opid=$!
  stored() { python3 -c "import sqlite3,sys;print(sqlite3.connect('file:$odb?mode=ro',uri=True).execute('select count(*) from trials').fetchone()[0])" 2>/dev/null || echo 0; }
  for _ in $(seq 120); do sleep 1; (( $(stored) >= 30 )) && break; done
  kids=$(ps -eo pid=,ppid=,args= | awk -v p=$opid '$2==p {print $1}' | tr '\n' ' ')
  before=$(stored)
  kill -9 $opid; wait $opid 2>/dev/null
  sleep 5
  left=$(for k in $kids; do ps -p "$k" -o pid=,args= ; done)
  strays=$(ps -eo pid=,args= | grep -E "ktune (__worker|__compile)" | grep -v grep)
  log "orphans: killed ktune tune (pid $opid) after $before stored trials; children then: ${kids:-none}; alive 5 s later: ${left:-none}; ktune __worker/__compile processes: ${strays:-none}"
  timeout -s INT -k 20 "$limit" "${otune[@]}" --json >"$out/orphans-resume.json" 2>"$out/orphans-resume.err"
  log "orphans resume: rc=$? $(python3 -c "import json;d=json.load(open('$out/orphans-resume.json'));print({k:d[k] for k in ('status','trials','measured','from_database')})" 2>&1) (from_database should be >= $before)"
  python3 -c "import sqlite3;print('runs:', sqlite3.connect('$odb').execute('select id,status from runs').fetchall())" | tee -a "$out/summary.txt"
}
