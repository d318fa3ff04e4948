#!/usr/bin/env python3
"""The effort and ceiling steps' table: one row per `ktune tune --json` output DIR/JOB-ARM.json.

usage: summarize_gpu.py DIR

Each row: wall seconds, trials, why the search stopped, the best's time and, where the job has a
`brute` arm (the effort step), that time against brute force's best; where the run had a ceiling
(the ceiling step), the best's fraction of it.
"""
import glob
import json
import os
import sys


def main():
    d = sys.argv[1]
    runs = {}
    for path in sorted(glob.glob(os.path.join(d, "*.json"))):
        name = os.path.basename(path)[:-5]
        if "-" not in name:
            continue
        job, arm = name.rsplit("-", 1)
        try:
            runs[(job, arm)] = json.load(open(path))
        except (OSError, ValueError) as e:
            print(f"== {name}: no result ({e})")
    print(f"{'job':16} {'arm':9} {'wall s':>7} {'trials':>6} {'stopped':>10} {'best ms':>10} "
          f"{'vs brute':>8} {'ceiling':>7}  best")
    for (job, arm), j in sorted(runs.items()):
        best = j.get("best") or {}
        t = best.get("time_ms")
        brute = (runs.get((job, "brute")) or {}).get("best") or {}
        ratio = brute["time_ms"] / t if t and brute.get("time_ms") else None
        c = j.get("ceiling") or {}
        stopped = ("ceiling" if c.get("reached") else "stagnation" if j.get("stagnated")
                   else "budget/end")
        frac = c.get("fraction")
        print(f"{job:16} {arm:9} {j.get('wall_seconds', 0):7.1f} {j.get('trials', 0):6} "
              f"{stopped:>10} {t if t else float('nan'):10.4f} "
              f"{ratio if ratio else float('nan'):8.3f} "
              f"{frac if frac is not None else float('nan'):7.3f}  {best.get('key', '-')}")


if __name__ == "__main__":
    main()
