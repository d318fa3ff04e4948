#!/usr/bin/env python3
"""Chooses a strategy and its options by held-out evaluation on recorded spaces.

Runs `ktune bench-strategies` once per candidate (a strategy and its options) on every
recording, then
  - in-sample: each candidate's figures on all spaces (for reference only: nothing is chosen
    from them);
  - leave one space out: for each space, the candidate that scores best on the *other* spaces
    is chosen and its figures on the held-out space are reported;
  - leave one GPU out: the same with every space of one GPU held out at once.
A candidate's merit on a set of spaces is its mean fraction of the optimum at the largest
budget plus 0.1 x its lowest score there (both goals at once: near the optimum on average, and
better than random search everywhere).

  scripts/held-out.py --ktune build/ktune --seeds 50 --candidates candidates.txt CACHES...

candidates.txt: one candidate a line, `strategy [name=value ...]`; '#' starts a comment.
Writes the per-candidate JSON next to --out (default held-out/).
"""
import argparse
import json
import os
import subprocess
import sys
from pathlib import Path


def run(ktune, candidate, caches, seeds, budgets, out):
    strategy, *options = candidate.split()
    tag = "_".join([strategy] + [o.replace("=", "-") for o in options])
    path = out / f"{tag}.json"
    if not path.exists():
        cmd = [ktune, "bench-strategies", "--strategies", strategy, "--seeds", str(seeds),
               "--budgets", budgets, "-q", "-o", str(path), "--replay", *caches]
        for o in options:
            cmd += ["--strategy-option", o]
        subprocess.run(cmd, check=True)
    data = json.loads(path.read_text())
    spaces = {s["name"]: s for s in data["spaces"]}
    per = {r["space"]: r for r in data["results"] if r["space"] != "overall"}
    for r in per.values():  # bench-strategies writes {"budget": B, "fraction": F} per budget
        r["fractions"] = [f["fraction"] for f in r["fractions"]]
    return candidate, spaces, per


def merit(per, names):
    rows = [per[n] for n in names]
    return (sum(r["fractions"][-1] for r in rows) / len(rows)
            + 0.1 * min(r["score"] for r in rows))


def table(title, budgets, rows):
    print(f"\n{title}")
    print("| space | chosen | " + " | ".join(budgets) + " | score |")
    print("| --- | --- | " + " | ".join("---" for _ in budgets) + " | --- |")
    for name, cand, r in rows:
        print(f"| {name} | `{cand}` | " + " | ".join(f"{f:.3f}" for f in r["fractions"])
              + f" | {r['score']:+.2f} |")
    n = len(rows)
    means = [sum(r["fractions"][i] for _, _, r in rows) / n for i in range(len(budgets))]
    print("| mean | | " + " | ".join(f"{m:.3f}" for m in means)
          + f" | {sum(r['score'] for _, _, r in rows) / n:+.2f} (min "
          f"{min(r['score'] for _, _, r in rows):+.2f}) |")


def held_out(results, groups, budgets, title):
    rows = []
    names = sorted({n for _, _, per in results for n in per})
    for label, held in groups.items():
        train = [n for n in names if n not in held]
        best = max(results, key=lambda c: merit(c[2], train))
        for n in sorted(held):
            rows.append((n if len(held) == 1 else f"{n} ({label} out)", best[0], best[2][n]))
    table(title, budgets, rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ktune", default="build/ktune")
    ap.add_argument("--seeds", type=int, default=50)
    ap.add_argument("--budgets", default="25,50,100,200")
    ap.add_argument("--candidates", required=True)
    ap.add_argument("--out", default="held-out")
    ap.add_argument("caches", nargs="+")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(exist_ok=True)
    candidates = [l.split("#")[0].strip() for l in Path(a.candidates).read_text().splitlines()]
    candidates = [c for c in candidates if c]
    results = [run(a.ktune, c, a.caches, a.seeds, a.budgets, out) for c in candidates]
    budgets = a.budgets.split(",")
    names = sorted(results[0][2])
    print("In-sample (every candidate on every space; mean fraction per budget, mean and lowest "
          "score, merit)")
    print("| candidate | " + " | ".join(budgets) + " | score | min score | merit |")
    print("| --- | " + " | ".join("---" for _ in budgets) + " | --- | --- | --- |")
    for cand, _, per in results:
        rows = [per[n] for n in names]
        means = [sum(r["fractions"][i] for r in rows) / len(rows) for i in range(len(budgets))]
        print(f"| `{cand}` | " + " | ".join(f"{m:.3f}" for m in means)
              + f" | {sum(r['score'] for r in rows) / len(rows):+.2f}"
              f" | {min(r['score'] for r in rows):+.2f} | {merit(per, names):.3f} |")
    held_out(results, {n: {n} for n in names}, budgets, "Leave one space out")
    # A GPU is the last '_'-separated part of a space name that is not the kernel's.
    gpus = {}
    for n in names:
        device = results[0][1][n]["device"] or n
        gpus.setdefault(device, set()).add(n)
    held_out(results, gpus, budgets, "Leave one GPU out")


if __name__ == "__main__":
    sys.exit(main())
