#!/usr/bin/env python3
"""Choosing the early cut-off (docs/measuring.md#early-cut-off) on recorded samples.

Each recorded space (Kernel Tuner caches with per-sample "times", ktune's recordings) is searched
in random orders; a configuration whose fastest of its first K samples is above T times the best
median so far stops sampling there. For a threshold T: how many of the space's near-optimal
configurations (median within 2% of the optimum) are ever cut (a cut one can never win), and the
share of samples saved. T is chosen leaving one space out: the smallest T (the most saved) that
cuts no near-optimal configuration on any other space, scored on the one left out.

    bench/cutoff/choose.py [FOLDER ...] [--k 5] [--orders 20]
"""
import argparse
import glob
import gzip
import json
import os
import random
import statistics
import sys

THRESHOLDS = [1.1, 1.2, 1.3, 1.5, 1.75, 2.0, 2.5, 3.0]


def spaces(folders):
    out = {}
    for folder in folders:
        for path in sorted(glob.glob(os.path.join(folder, "*.json.gz"))):
            d = json.load(gzip.open(path))
            rows = []
            for v in d.get("cache", {}).values():
                t = v.get("times")
                if isinstance(t, list) and len(t) >= 5 and all(isinstance(x, (int, float)) for x in t):
                    rows.append([float(x) for x in t])
            if len(rows) >= 20:
                out[os.path.basename(path).replace(".json.gz", "")] = rows
    return out


def simulate(rows, t, k, orders):
    """(near-optimal configurations cut at least once, their count, share of samples saved)."""
    med = [statistics.median(r) for r in rows]
    opt = min(med)
    near = {i for i, m in enumerate(med) if m <= 1.05 * opt}
    cut_near, saved, total = set(), 0, 0
    rng = random.Random(1)
    for _ in range(orders):
        order = list(range(len(rows)))
        rng.shuffle(order)
        best = float("inf")
        for i in order:
            r = rows[i]
            total += len(r)
            if min(r[:k]) > t * best:
                saved += len(r) - k
                if i in near:
                    cut_near.add(i)
                continue
            best = min(best, med[i])
    return len(cut_near), len(near), saved / total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("folders", nargs="*",
                    default=["../shared/replay/kt-caches", "db/recordings"])
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--orders", type=int, default=20)
    a = ap.parse_args()
    sp = spaces(a.folders)
    table = {name: {t: simulate(rows, t, a.k, a.orders) for t in THRESHOLDS}
             for name, rows in sp.items()}
    print(f"{'space':58} " + " ".join(f"{t:>11}" for t in THRESHOLDS))
    for name, row in table.items():
        print(f"{name:58} " + " ".join(f"{c}/{n} {s:4.0%}".rjust(11) for c, n, s in row.values()))
    print("\nleave one space out: T chosen on the others (smallest cutting no near-optimal one)")
    chosen = []
    for name in table:
        ok = [t for t in THRESHOLDS
              if all(table[o][t][0] == 0 for o in table if o != name)]
        t = ok[0] if ok else THRESHOLDS[-1]
        c, n, s = table[name][t]
        chosen.append(t)
        print(f"{name:58} T={t:<5} near-optimal cut {c}/{n}, samples saved {s:.0%}")
    print(f"\nT chosen on all but one: {sorted(set(chosen))}")


if __name__ == "__main__":
    sys.exit(main())
