# shellcheck shell=bash disable=SC2154  # out, build, ktune, limit and P come from lib.sh
# Energy (docs/energy.md): how repeatable one configuration's energy is at each length of its
# energy run, and the time-energy Pareto sets of searches that measure energy.

# step energy: one configuration of each case evaluated five times at each energy-run length (bench/energy/repeat.cpp: the energy's coefficient of variation), then each job's random search with energy, a fresh database each, and reduce-kt270 brute-forced with energy (no early cut-off) and exported as a recording: the Pareto set, the least-energy configuration's saving against the fastest and its cost in time (bench/energy/summarize.py)
# param cases=reduce:n=268435456,matmul:m=4096;n=4096;k=4096,convolution2d:h=4096;w=4096;f=15,reduce:n=4194304: KERNEL:PROBLEM cases of the repeatability (';' between a problem's parameters)
# param lengths=100,300,1000: energy-run lengths (ms) of the repeatability
# param jobs=matmul,convolution2d,reduce: the jobs (configs/JOB.toml) searched with energy
# param budget=100: evaluations of each job's random search
# param energy-ms=300: the energy-run length of the searches
step_energy() {
  local case kernel problem job dir="$out/energy"
  mkdir -p "$dir" "$out/recordings"
  for case in ${P[cases]//,/ }; do
    kernel=${case%%:*}; problem=${case#*:}; problem=${problem//;/,}
    timeout -s INT -k 20 "$limit" "$build/bench/energy_repeat" "$kernel" "$problem" --energy-ms "${P[lengths]}" \
      --repeats 5 >"$dir/repeat-$kernel-$problem.txt" 2>&1
    log "energy repeat $kernel $problem: rc=$?"
    tee -a "$out/summary.txt" <"$dir/repeat-$kernel-$problem.txt"
  done
  for job in ${P[jobs]//,/ }; do
    rm -f "$dir/$job.db"*
    timeout -s INT -k 20 "$limit" "$ktune" tune --config "configs/$job.toml" --strategy random \
      --budget-evals "${P[budget]}" --seed 1 --energy-ms "${P[energy-ms]}" --db "$dir/$job.db" --json \
      >"$dir/$job.json" 2>"$dir/$job.err"
    log "energy search $job: rc=$? $(tail -1 "$dir/$job.err")"
  done
  rm -f "$dir/kt270.db"*
  timeout -s INT -k 20 "$limit" "$ktune" tune --config configs/reduce-kt270.toml --energy-ms "${P[energy-ms]}" --no-cutoff \
    --db "$dir/kt270.db" --json >"$dir/kt270.json" 2>"$dir/kt270.err"
  log "energy brute reduce-kt270: rc=$? $(tail -1 "$dir/kt270.err")"
  "$ktune" export reduce --db "$dir/kt270.db" --problem "n=2**25" --kt-cache "$out/recordings/" >>"$out/export.log" 2>&1 ||
    log "energy: export of reduce-kt270 failed"
  python3 bench/energy/summarize.py "$dir"/*.db | tee -a "$out/summary.txt"
}
check_energy() {
  local case
  for case in ${P[cases]//,/ }; do
    case $case in *:*=*) ;; *)
      echo "run.sh: step energy: cases: '$case' is not KERNEL:NAME=VALUE[;NAME=VALUE...]" >&2; return 1 ;;
    esac
  done
}
