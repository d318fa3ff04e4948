#!/usr/bin/env bash
# The strategy benchmark in CI's time (docs/strategies.md#measurements): `ktune bench-strategies`
# on the recordings shipped in db/recordings (ktune's own kernels on an H100 and an H200, spaces
# the default was not chosen on), 5 seeds, the default and its rivals; then the transfer
# between the two GPUs that recorded the same kernel. Fails when a strategy leaves a space out,
# `auto` ends below 0.98 of the optimum at 200 evaluations on average, or the transfer is below
# 0.95 after 20.
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
# Transfer (leave one GPU out) on the kernels recorded on two GPUs: the opening and the search
# after it, 3 seeds. Fails below 0.95 of the optimum after 20 evaluations on average.
transfer=$(dirname "$out")/bench-strategies-transfer.json
"$ktune" bench-strategies --transfer --strategies auto --seeds 3 --budgets 10,20,200 \
  -o "$transfer" --replay "$root"/db/recordings/soa_aos-*.json.gz >/dev/null
python3 - "$transfer" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
overall = [r for r in d["results"] if r["space"] == "overall"][0]
at20 = overall["fractions"][1]["fraction"]
print(f"transfer: {at20:.3f} of the optimum after 20 evaluations, mean over {len(d['spaces'])} GPUs")
if len(d["spaces"]) < 2 or at20 < 0.95:
    sys.exit(f"transfer: {len(d['spaces'])} spaces, {at20:.3f} after 20 (at least 0.95 expected)")
PY
