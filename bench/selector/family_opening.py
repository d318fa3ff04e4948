#!/usr/bin/env python3
"""How a family's later problems should open, on the recordings of several sizes (replayed, no
GPU): seeded with their nearest tuned neighbours' best (what `ktune tune` does for a family) or
with the transfer opening (each problem tuned alone with --warm-start, in the family's order),
beside each problem tuned cold. Mean quality over the family's problems and seeds, per budget.

    bench/selector/family_opening.py [--ktune build/tuner/ktune] [--budgets 15,20,30] [--seeds 5]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import acceptance  # noqa: E402

FAMILIES = {
    "reduce": ["--problem", "n=2**18..2**28..4"],
    "transpose": ["--problem", "rows=[1024,2048,4096,8192,12288,16384]", "--problem", "cols=rows"],
    "convolution2d": ["--problem", "h=[512,768,1024,2048,3072,4096]", "--problem", "w=h"],
}


def problem_args(problem):
    out = []
    for k, v in problem.items():
        if k != "f":
            out += ["--problem", f"{k}={v}"]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ktune", default="build/tuner/ktune")
    ap.add_argument("--folder", default="db/recordings/sizes")
    ap.add_argument("--budgets", default="15,20,30")
    ap.add_argument("--seeds", type=int, default=5)
    a = ap.parse_args()
    print(f"{'kernel':14} {'budget':>6} {'cold':>6} {'transfer':>8} {'seeded':>6}")
    for kernel, family in FAMILIES.items():
        recs = acceptance.recordings(a.folder, kernel)
        files, params = acceptance.recording_files(a.folder, kernel)
        for budget in [int(b) for b in a.budgets.split(",")]:
            scores = {"cold": [], "transfer": [], "seeded": []}
            for seed in range(1, a.seeds + 1):
                with tempfile.TemporaryDirectory() as tmp:
                    common = ["--config", f"configs/{kernel}.toml", "--strategy", "auto",
                              "--budget-evals", str(budget), "--seed", str(seed), "-q"]
                    seeded = os.path.join(tmp, "seeded.db")
                    args = [a.ktune, "tune"] + common + family + ["--no-selector", "--json", "--db", seeded]
                    for f in files.values():
                        args += ["--replay", f]
                    r = subprocess.run(args, capture_output=True, text=True, check=True)
                    order = [m["problem"] for m in json.loads(r.stdout)["family"]]
                    transfer = os.path.join(tmp, "transfer.db")
                    cold = os.path.join(tmp, "cold.db")
                    for n, key in enumerate(order):
                        problem = dict(kv.split("=") for kv in key.split(","))
                        problem = {k: int(v) for k, v in problem.items()}
                        f = files[tuple(sorted(problem.items()))]
                        base = [a.ktune, "tune"] + common + problem_args(problem) + ["--replay", f]
                        subprocess.run(base + ["--db", transfer] + (["--warm-start"] if n else []),
                                       capture_output=True, check=True)
                        subprocess.run(base + ["--db", cold], capture_output=True, check=True)
                    for arm, db in (("cold", cold), ("transfer", transfer), ("seeded", seeded)):
                        for rec in recs.values():
                            b = acceptance.best(a.ktune, db, kernel, rec[0])
                            scores[arm].append(acceptance.quality(rec, acceptance.kt_key(b["key"], params)) if b else 0)
            print(f"{kernel:14} {budget:6} " + " ".join(
                f"{sum(v) / len(v):{w}.3f}" for (k, v), w in zip(scores.items(), (6, 8, 6))), flush=True)


if __name__ == "__main__":
    sys.exit(main())
