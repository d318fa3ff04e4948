#!/usr/bin/env python3
"""The GPU host's `cutoff` step, side by side: for each job run with the early cut-off (NAME-cut)
and without (NAME-whole), the same seed, their bests, the ratio of their times, the trials cut,
GPU and wall seconds.

    bench/cutoff/compare.py DIR
"""
import glob
import json
import os
import sys


def load(path):
    try:
        return json.load(open(path))
    except (OSError, ValueError):
        return None


def main():
    d = sys.argv[1]
    print(f"{'job':22} {'same best':>9} {'cut/whole time':>14} {'cut':>5} "
          f"{'GPU s cut/whole':>16} {'wall s cut/whole':>17} {'rate cut/whole':>15}")
    for path in sorted(glob.glob(os.path.join(d, "*-cut.json"))):
        name = os.path.basename(path)[: -len("-cut.json")]
        a, b = load(path), load(os.path.join(d, name + "-whole.json"))
        if not a or not b or "best" not in a or "best" not in b:
            print(f"== cutoff {name}: a run has no best")
            continue
        same = a["best"]["key"] == b["best"]["key"]
        ratio = a["best"]["time_ms"] / b["best"]["time_ms"]
        print(f"== cutoff {name:14} {'yes' if same else 'no':>9} {ratio:14.3f} {a.get('cut', 0):5} "
              f"{a['gpu_seconds']:7.2f} / {b['gpu_seconds']:6.2f} "
              f"{a['wall_seconds']:8.2f} / {b['wall_seconds']:6.2f} "
              f"{a['configs_per_second']:7.1f} / {b['configs_per_second']:5.1f}")


if __name__ == "__main__":
    sys.exit(main())
