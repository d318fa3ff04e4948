# shellcheck shell=bash disable=SC2154  # out, ktune, limit and P come from lib.sh
# The headline figure of issue 52: how long ktune's default search and Kernel Tuner 1.4's
# strategies take to reach within 2% of a space's brute-forced optimum, in one call on one GPU
# (bench/headline/README.md).

# step headline: time to within 2% of each space's optimum (each tool's brute force of its own space first, same call): ktune's default search against Kernel Tuner 1.4's strategies, median over the seeds, on the 270-configuration space and a larger one; the table and Kernel Tuner's best / ktune to summary.txt, headline.json beside it
# param seeds=5: runs of each search, seeds 1 to N
# param strategies=genetic_algorithm,dual_annealing,greedy_ils,bayes_opt,random_sample: Kernel Tuner's strategies; one whose Python dependencies this host lacks is reported as could not run, with the import error
# param spaces=kt270,wide: kt270: configs/reduce-kt270.toml and Kernel Tuner's 270; wide: bench/headline/reduce-wide.toml (480) and Kernel Tuner's reduce.cu widened to 504
# param budget=100: with effort= empty, ktune's search is --strategy auto --budget-evals BUDGET
# param effort=default: quick, default or thorough: ktune's search is --strategy auto --effort EFFORT (the level's budget and stagnation stop); empty: the budget= search
# param kt-limit=15: seconds of one Kernel Tuner search at most (less where the step's time runs short)
# param iterations=7: Kernel Tuner's timed runs per configuration (its default); ktune times as the job files say
# param seconds=330: the step's time, brute forces included: Kernel Tuner's runs share what ktune leaves, each at most kt-limit
# param peer=.peers/kernel_tuner: the Kernel Tuner folder (site/, reduce.cu; an ignored folder of the checkout, sent with it)
check_headline() {
  local s
  for s in ${P[spaces]//,/ }; do
    case $s in kt270|wide) ;; *) echo "run.sh: step headline: unknown space '$s' (kt270, wide)" >&2; return 1 ;; esac
  done
  for s in ${P[strategies]//,/ }; do
    case $s in
      brute_force|random_sample|minimize|basinhopping|diff_evo|genetic_algorithm|greedy_mls|ordered_greedy_mls|greedy_ils|\
      dual_annealing|mls|pso|simulated_annealing|skopt|firefly_algorithm|bayes_opt) ;;
      *) echo "run.sh: step headline: '$s' is not a strategy of Kernel Tuner 1.4" >&2; return 1 ;;
    esac
  done
  case ${P[effort]} in ''|quick|default|thorough) ;;
    *) echo "run.sh: step headline: effort=${P[effort]} is not quick, default or thorough" >&2; return 1 ;;
  esac
  (( P[seeds] >= 1 && P[seconds] >= 30 )) ||
    { echo "run.sh: step headline: needs seeds >= 1 and seconds >= 30" >&2; return 1; }
}
step_headline() {
  local kt=${P[peer]} tools=ktune,kernel_tuner search="--strategy auto --budget-evals ${P[budget]}"
  # The job files name brute_force as their strategy: --strategy auto stays with an effort level.
  [ -n "${P[effort]}" ] && search="--strategy auto --effort ${P[effort]}"
  if [ ! -d "$kt/site" ] || [ ! -f "$kt/reduce.cu" ]; then
    log "headline: no Kernel Tuner at $kt (headline:peer=DIR): ktune's side alone"
    tools=ktune
  fi
  python3 bench/headline/headline.py --ktune "$ktune" --peer "$kt" --out "$out/headline" --tools "$tools" \
    --spaces "${P[spaces]}" --strategies "${P[strategies]}" --seeds "${P[seeds]}" --iterations "${P[iterations]}" \
    --kt-limit "${P[kt-limit]}" --seconds "${P[seconds]}" --run-timeout "$limit" --ktune-search "$search" \
    >"$out/headline.log" 2>&1
  log "headline: rc=$? ($(tail -1 "$out/headline.log")); ktune's search: $search"
  python3 bench/headline/summarize.py "$out/headline/runs.json" --json "$out/headline.json" 2>&1 |
    tee -a "$out/summary.txt"
}
