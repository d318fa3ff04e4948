#!/usr/bin/env python3
"""Chooses the effort levels' budget and stagnation stop by held-out evaluation.

usage: choose.py BENCH.json [--group space|kernel] [--strategy bayes]

BENCH.json is what `ktune bench-strategies --strategies bayes --replay ... --budgets B,...
--stagnation W,... -o BENCH.json` wrote. For each level (target fraction of the optimum), each
recorded space (or kernel's spaces) is left out in turn; on the others the cheapest (budget,
window) is chosen (fewest mean evaluations) whose mean fraction of the optimum over those spaces
(each a mean over the seeds) reaches the target; the left-out space is then scored with that choice. A space with no more valid
configurations than the budget is measured whole, as `ktune tune` does (fraction 1). The
product's setting is the choice the folds made most often: never one fitted to all spaces.
"""
import argparse
import json
import statistics
import sys

LEVELS = (("quick", 0.97), ("default", 0.99), ("thorough", 0.995))
MARGIN = 0.0  # --margin: what the spaces kept must reach beyond the target


def load(path, strategy):
    report = json.load(open(path))
    configs = {s["name"]: s["configs"] for s in report["spaces"]}
    kernels = {s["name"]: s["kernel"] for s in report["spaces"]}
    table = {}  # space -> (budget, window) -> (fraction, evaluations, worst seed)
    for r in report["results"]:
        if r["strategy"] != strategy or r["space"] == "overall":
            continue
        cells = {}
        for st in r["stopped"]:
            b, w = st["budget"], st["window"]
            if configs[r["space"]] <= b:  # auto measures the whole space
                cells[(b, w)] = (1.0, float(configs[r["space"]]), 1.0)
            else:
                cells[(b, w)] = (st["fraction"], st["evaluations"], st["worst"])
        table[r["space"]] = cells
    if not table:
        sys.exit(f"choose.py: {path} has no stopped results of strategy {strategy} "
                 "(run bench-strategies with --stagnation)")
    return table, kernels


def choose(table, spaces, target):
    """The cheapest (budget, window) whose mean over `spaces` reaches `target` (with margin)."""
    best = None
    for cell in table[spaces[0]]:
        fractions = [table[s][cell][0] for s in spaces]
        if statistics.mean(fractions) < target + MARGIN:
            continue
        cost = statistics.mean(table[s][cell][1] for s in spaces)
        if best is None or cost < best[0]:
            best = (cost, cell)
    if best is None:  # none reaches it: the one with the highest mean
        cell = max(table[spaces[0]], key=lambda c: (statistics.mean(table[s][c][0] for s in spaces),
                                                    -statistics.mean(table[s][c][1]
                                                                     for s in spaces)))
        return cell, False
    return best[1], True


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bench")
    ap.add_argument("--group", choices=("space", "kernel"), default="space",
                    help="leave one space out, or all spaces of one kernel")
    ap.add_argument("--strategy", default="bayes")
    ap.add_argument("--margin", type=float, default=0.005,
                    help="the spaces kept must reach the target plus this on average")
    a = ap.parse_args()
    global MARGIN
    MARGIN = a.margin
    table, kernels = load(a.bench, a.strategy)
    names = sorted(table)
    groups = {}
    for n in names:
        groups.setdefault(n if a.group == "space" else kernels[n], []).append(n)
    summary = {}
    for level, target in LEVELS:
        print(f"\n{level}: target {target} of the optimum, leave one {a.group} out")
        print(f"  {'left out':46} {'budget':>6} {'window':>6} {'fraction':>8} {'worst':>6} "
              f"{'evals':>6}")
        held, choices = [], []
        for g, members in sorted(groups.items()):
            train = [n for n in names if n not in members]
            cell, met = choose(table, train, target)
            choices.append(cell)
            for n in members:
                f, e, w = table[n][cell]
                held.append((f, e, w))
                print(f"  {n:46} {cell[0]:6} {cell[1]:6} {f:8.3f} {w:6.3f} {e:6.0f}"
                      f"{'' if met else '  (no choice met the target on the others)'}")
        fractions = [h[0] for h in held]
        mean_f, low_f = statistics.mean(fractions), min(fractions)
        evals = statistics.mean(h[1] for h in held)
        reached = sum(f >= target for f in fractions)
        print(f"  held out: mean {mean_f:.3f}, lowest space {low_f:.3f}, {reached} of "
              f"{len(fractions)} spaces at or above {target}, mean evaluations {evals:.0f}")
        # The product's setting: the choice the folds made most often (the larger on a tie),
        # never one fitted to every space at once.
        counts = {}
        for c in choices:
            counts[c] = counts.get(c, 0) + 1
        cell = max(counts, key=lambda c: (counts[c], c))
        print(f"  the folds' most frequent choice: budget {cell[0]}, window {cell[1]} "
              f"({counts[cell]} of {len(choices)} folds)")
        summary[level] = {"budget": cell[0], "window": cell[1], "held_out_mean": mean_f,
                          "held_out_lowest": low_f, "held_out_reached": reached,
                          "spaces": len(fractions), "held_out_evaluations": evals}
    print("\n" + json.dumps(summary))


if __name__ == "__main__":
    main()
