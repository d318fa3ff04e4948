#!/usr/bin/env bash
# The strategy benchmark in CI's time (docs/strategies.md#measurements): `ktune bench-strategies`
# on the recordings shipped in db/recordings (ktune's own kernels on an H100 and an H200, spaces
# the default was not chosen on), 5 seeds, the default and its rivals. Fails when a strategy
# leaves a space out or `auto` ends below 0.98 of the optimum at 200 evaluations on average.
#
#   scripts/bench-strategies-quick.sh KTUNE [OUT.json]
set -euo pipefail
ktune=${1:?usage: scripts/bench-strategies-quick.sh KTUNE [OUT.json]}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${2:-$(mktemp -d)/bench-strategies-quick.json}
strategies=auto,genetic_algorithm,greedy_ils,random
# Optuna's TPE where the embedded Python has Optuna (a one-evaluation probe says).
probe=$(mktemp -d)
if "$ktune" tune --replay "$root"/db/recordings/cn_pnpoly-*.json.gz --strategy optuna:tpe \
    --budget-evals 1 --retime-top 0 --db "$probe/p.db" -q >/dev/null 2>&1; then
  strategies+=,optuna:tpe
else
  echo "note: optuna:tpe left out (no Optuna in the embedded Python)"
fi
rm -rf "$probe"
"$ktune" bench-strategies --strategies "$strategies" --seeds 5 --budgets 25,50,100,200 \
  -o "$out" --replay "$root"/db/recordings/*.json.gz
python3 - "$out" "$strategies" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
names = sys.argv[2].split(",")
spaces = [s["name"] for s in d["spaces"]]
bad = []
if d.get("failed"):
    bad.append(f"spaces that failed: {d['failed']}")
for n in names:
    got = {r["space"] for r in d["results"] if r["strategy"] == n}
    missing = [s for s in spaces if s not in got]
    if missing:
        bad.append(f"{n}: no result on {missing}")
overall = {r["strategy"]: r for r in d["results"] if r["space"] == "overall"}
auto = overall["auto"]["fractions"][-1]["fraction"]
print(f"auto: {auto:.3f} of the optimum at 200 evaluations, mean over {len(spaces)} spaces")
if auto < 0.98:
    bad.append(f"auto reaches {auto:.3f} of the optimum at 200 evaluations (at least 0.98 expected)")
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
PY
