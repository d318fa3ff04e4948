#!/usr/bin/env python3
"""Leave one size out, through ktune itself: for each kernel with recordings at several sizes,
each size in turn is left out, the others are tuned as a family (replayed, with the
cross-measurement and the selector), and `ktune best` answers the left-out size (the selector
within the family's range; beyond it, as the run-time client, the nearest tuned size's best); its
answer's quality there (the recorded optimum over its recorded time) beside the nearest tuned
size's best.

    bench/selector/held_out.py [--ktune build/tuner/ktune] [--budget 30] [--seeds 3]
"""
import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import acceptance  # noqa: E402
from family_opening import problem_args  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ktune", default="build/tuner/ktune")
    ap.add_argument("--folder", default="db/recordings/sizes")
    ap.add_argument("--budget", type=int, default=30)
    ap.add_argument("--seeds", type=int, default=3)
    a = ap.parse_args()
    print(f"{'kernel':14} {'selector mean':>13} {'worst':>6} {'nearest mean':>12} {'worst':>6}")
    for kernel in ["reduce", "transpose", "convolution2d"]:
        files, params = acceptance.recording_files(a.folder, kernel)
        recs = acceptance.recordings(a.folder, kernel)
        picks, nearest = [], []
        for left in recs:
            rest = [k for k in recs if k != left]
            for seed in range(1, a.seeds + 1):
                with tempfile.TemporaryDirectory() as tmp:
                    db = os.path.join(tmp, "f.db")
                    args = [a.ktune, "tune", "--config", f"configs/{kernel}.toml", "--strategy", "auto",
                            "--budget-evals", str(a.budget), "--seed", str(seed), "-q", "--db", db]
                    first, follows = {"reduce": ("n", None), "transpose": ("rows", "cols"),
                                      "convolution2d": ("h", "w")}[kernel]
                    values = sorted({dict(k)[first] for k in rest})
                    args += ["--problem", f"{first}=[{','.join(map(str, values))}]"]
                    if follows:
                        args += ["--problem", f"{follows}={first}"]
                    for k in rest:
                        args += ["--replay", files[k]]
                    subprocess.run(args, capture_output=True, check=True)
                    near = min(rest, key=lambda k: acceptance.log2dist(recs[k][0], recs[left][0]))
                    nb = acceptance.best(a.ktune, db, kernel, recs[near][0])
                    # Beyond the family's range the selector does not answer; the run-time
                    # client answers the nearest tuned problem's best there.
                    b = acceptance.best(a.ktune, db, kernel, recs[left][0]) or nb
                    picks.append(acceptance.quality(recs[left], acceptance.kt_key(b["key"], params)))
                    nearest.append(acceptance.quality(recs[left], acceptance.kt_key(nb["key"], params)))
        print(f"{kernel:14} {sum(picks) / len(picks):13.3f} {min(picks):6.3f} "
              f"{sum(nearest) / len(nearest):12.3f} {min(nearest):6.3f}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
