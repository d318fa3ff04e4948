#!/usr/bin/env python3
"""The acceptance of families (docs/many-sizes.md#measured): from the databases of the GPU host's
`family` step and the recordings brute-forced at the tuned and the untuned sizes.

For each kernel: the mean quality at the tuned sizes (the recorded optimum over the recorded
time of the configuration each database stores as best) of the family and of each cold budget,
with their wall times; and at each untuned size what `ktune best` answers from the family's
database (the selector) beside the nearest tuned size's best, against that size's brute force.

    bench/selector/acceptance.py OUT [--ktune build/tuner/ktune]
        [--tuned db/recordings/sizes] [--untuned OUT/recordings]
"""
import argparse
import gzip
import json
import math
import os
import re
import subprocess
import sys


def recordings(folder, kernel):
    out = {}
    for name in sorted(os.listdir(folder)):
        if name.startswith(kernel + "-") and name.endswith(".json.gz"):
            d = json.load(gzip.open(os.path.join(folder, name)))
            times = {k: v["time"] for k, v in d["cache"].items() if isinstance(v["time"], float)}
            problem = d["ktune"]["problem"]
            out[tuple(sorted(problem.items()))] = (problem, times)
    return out


def recording_files(folder, kernel):
    """The kernel's recordings in `folder`: {problem as a sorted tuple: path}, and the names of
    its tuning parameters in the recordings' order."""
    files, params = {}, []
    for name in sorted(os.listdir(folder)):
        if name.startswith(kernel + "-") and name.endswith(".json.gz"):
            d = json.load(gzip.open(os.path.join(folder, name)))
            files[tuple(sorted(d["ktune"]["problem"].items()))] = os.path.join(folder, name)
            params = d["tune_params_keys"]
    return files, params


def kt_key(key, order):
    """A ktune config key "a=1,b=2" as the recording's "1,2" in its parameter order."""
    values = dict(item.split("=", 1) for item in key.split(","))
    return ",".join(values[p] for p in order)


def quality(rec, key):
    problem, times = rec
    t = times.get(key)
    return min(times.values()) / t if t else 0.0


def best(ktune, db, kernel, problem):
    args = [ktune, "best", kernel, "--db", db, "--json"]
    for name, value in problem.items():
        if name != "f":
            args += ["--problem", f"{name}={value}"]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        return None
    return json.loads(r.stdout)["results"][0]


def client_answers(path):
    """The run-time client's answers (bench/selector/client_picks.cpp) by the problem asked."""
    if not os.path.exists(path):
        return {}
    return {j["problem"]: j for j in map(json.loads, open(path)) if "problem" in j}


def walls(summary):
    out = {}
    for line in open(summary):
        m = re.match(r"== (family-tuning|family|cold) (\S+) budget=(\d+) wall_s=([\d.]+)", line)
        if m:
            out[(m.group(2), m.group(1), int(m.group(3)))] = float(m.group(4))
    return out


def log2dist(a, b):
    return sum(abs(math.log2(a[k]) - math.log2(b[k])) for k in a if k != "f")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--ktune", default="build/tuner/ktune")
    ap.add_argument("--tuned", default="db/recordings/sizes")
    ap.add_argument("--untuned")
    a = ap.parse_args()
    untuned_dir = a.untuned or os.path.join(a.out, "recordings")
    wall = walls(os.path.join(a.out, "summary.txt"))
    fam_dir = os.path.join(a.out, "family")
    print(f"{'kernel':14} {'run':18} {'wall s':>7} {'mean':>6} {'worst':>6}")
    picks = []
    for kernel in ["reduce", "transpose", "convolution2d"]:
        tuned = recordings(a.tuned, kernel)
        if not tuned:
            continue
        order = recording_files(a.tuned, kernel)[1]
        runs = sorted((kind, b) for (k, kind, b) in wall if k == kernel)
        family_bests = {}
        for kind, budget in runs:
            db = os.path.join(fam_dir, f"{kernel}-{kind}-{budget}.db")
            q = []
            for rec in tuned.values():
                b = best(a.ktune, db, kernel, rec[0])
                key = kt_key(b["key"], order) if b else ""
                q.append(quality(rec, key))
                if kind == "family":
                    family_bests.setdefault(budget, {})[tuple(sorted(rec[0].items()))] = key
            print(f"{kernel:14} {kind + ' ' + str(budget):18} {wall[(kernel, kind, budget)]:7.1f} "
                  f"{sum(q) / len(q):6.3f} {min(q):6.3f}")
        for budget, bests in sorted(family_bests.items()):
            picks += untuned_picks(a, kernel, budget, bests, tuned, order, untuned_dir, fam_dir)
    print()
    print(f"{'kernel':14} {'budget':>6} {'untuned problem':24} {'answer':9} {'pick':>6} {'nearest':>8}")
    for kernel, budget, problem, match, chosen, nearest in picks:
        text = ",".join(f"{k}={v}" for k, v in problem.items() if k != "f")
        print(f"{kernel:14} {budget:6} {text:24} {match:9} {chosen:6.3f} {nearest:8.3f}")
    for kernel, budget in sorted({(p[0], p[1]) for p in picks}):
        c = [p[4] for p in picks if (p[0], p[1]) == (kernel, budget)]
        n = [p[5] for p in picks if (p[0], p[1]) == (kernel, budget)]
        print(f"{kernel:14} budget {budget}: selector mean {sum(c) / len(c):.3f} worst "
              f"{min(c):.3f}; nearest mean {sum(n) / len(n):.3f} worst {min(n):.3f}")


def untuned_picks(a, kernel, budget, family_bests, tuned, order, untuned_dir, fam_dir):
    """At each untuned size: the client's answer from the family's database (`ktune best` where
    the step did not ask the client) and the nearest tuned size's best, against its brute force."""
    picks = []
    db = os.path.join(fam_dir, f"{kernel}-family-{budget}.db")
    client = client_answers(os.path.join(fam_dir, f"{kernel}-client-{budget}.jsonl"))
    for rec in recordings(untuned_dir, kernel).values():
        b = best(a.ktune, db, kernel, rec[0])
        asked = ",".join(f"{k}={v}" for k, v in rec[0].items())
        if asked in client:  # the C++ client's answer where the step asked it
            c = client[asked]
            if b and c.get("key") != b["key"]:
                print(f"note: {kernel} [{asked}]: the client answers {c.get('key')}, "
                      f"ktune best {b['key']}")
            b = {"key": c["key"], "match": c["problem_match"]} if "key" in c else None
        chosen = quality(rec, kt_key(b["key"], order)) if b else 0.0
        near = min(tuned.values(), key=lambda t: log2dist(t[0], rec[0]))
        nearest = quality(rec, family_bests[tuple(sorted(near[0].items()))])
        picks.append((kernel, budget, rec[0], b["match"] if b else "none", chosen, nearest))
    return picks


if __name__ == "__main__":
    sys.exit(main())
