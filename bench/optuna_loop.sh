#!/usr/bin/env bash
# An Optuna sampler's cost as the tuning loop sees it (docs/optuna.md#overhead-per-ask-and-tell):
# `ktune tune --replay` of a recorded space at 100 and 1000 evaluations, and the loop's
# strategy_seconds (wall time inside the strategy's ask and tell) per trial, from --json.
#
#   bench/optuna_loop.sh [KTUNE] [STRATEGY] [OPTION ...] -- RECORDING ...
#     KTUNE     the ktune binary (default build/tuner/ktune)
#     STRATEGY  default optuna:tpe
#     OPTION    --strategy-option values, e.g. cached=false (Optuna's TPESampler as it is)
set -euo pipefail
ktune=$(realpath "${1:-build/tuner/ktune}")
strategy=${2:-optuna:tpe}
shift $(($# < 2 ? $# : 2))
options=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do options+=(--strategy-option "$1"); shift; done
[ $# -gt 0 ] && shift
if [ $# -eq 0 ]; then
  echo "usage: bench/optuna_loop.sh [KTUNE] [STRATEGY] [OPTION ...] -- RECORDING ..." >&2
  exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "recording  evaluations  strategy_ms/trial  search_s  wall_s   ($strategy ${options[*]:-})"
for recording in "$@"; do
  for evals in 100 1000; do
    rm -f "$work/r.db"
    "$ktune" tune --replay "$recording" --strategy "$strategy" "${options[@]}" --seed 1 \
      --budget-evals "$evals" --retime-top 0 --db "$work/r.db" -q --json > "$work/r.json"
    python3 - "$work/r.json" "$(basename "$recording")" "$evals" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"{sys.argv[2]:<40} {sys.argv[3]:>5}  {d['strategy_seconds'] * 1e3 / d['trials']:10.2f}"
      f"  {d['search_seconds']:8.2f}  {d['wall_seconds']:7.2f}")
PY
  done
done
