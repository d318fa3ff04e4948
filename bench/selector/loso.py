#!/usr/bin/env python3
"""Leave one size out: which run-time selector answers an untuned size best.

For each kernel with recordings at several sizes (db/recordings/sizes), each size in turn is
left out; the others are the family. Candidates are the best `per_size` configurations of each
family size (as a family tuning finds them), measured at every family size (the
cross-measurement). A selector maps the left-out size to one candidate; its score is the
candidate's performance there (optimum time / its time). Prints mean and worst per kernel.

    bench/selector/loso.py [FOLDER] [--per-size 1,2,3,4]
"""
import argparse
import gzip
import json
import math
import os
import sys
from collections import defaultdict


def load(folder):
    kernels = defaultdict(dict)
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".json.gz"):
            continue
        d = json.load(gzip.open(os.path.join(folder, name)))
        problem = d["ktune"]["problem"]
        times = {k: v["time"] for k, v in d["cache"].items() if isinstance(v["time"], float)}
        kernels[d["kernel_name"]][tuple(sorted(problem.items()))] = times
    return {k: dict(sorted(v.items(), key=lambda s: features(s[0]))) for k, v in kernels.items()}


def features(problem):
    return [math.log2(v) for k, v in problem if isinstance(v, (int, float)) and v > 0]


def dist(a, b):
    return math.sqrt(sum((x - y) ** 2 for x, y in zip(features(a), features(b))))


_OPT = {}


def perf(times, key):
    t = times.get(key)
    if id(times) not in _OPT:
        _OPT[id(times)] = min(times.values())
    return _OPT[id(times)] / t if t else 0.0


def candidates(family, per_size):
    out = []
    for p, times in family.items():
        for k in sorted(times, key=times.get)[:per_size]:
            if k not in out:
                out.append(k)
    return out


def log_perf(family, c, s):
    return math.log(max(perf(family[s], c), 1e-3))


def pick_nearest(family, cands, x, h=None):
    s = min(family, key=lambda s: dist(s, x))
    return max(cands, key=lambda c: perf(family[s], c))


def pick_weighted(family, cands, x, h):
    w = {s: math.exp(-dist(s, x) ** 2 / (2 * h * h)) for s in family}
    return max(cands, key=lambda c: sum(w[s] * log_perf(family, c, s) for s in family))


def varying(family):
    fs = [features(s) for s in family]
    return [i for i in range(len(fs[0])) if len({f[i] for f in fs}) > 1]


def local_linear(family, c, x, h):
    """Candidate c's log performance at x: a line through the family's sizes, weighted by
    closeness to x (Gaussian in log2 distance, width h), over the features that vary."""
    dims = varying(family)
    fx = features(x)
    rows = []
    for s in family:
        fs = features(s)
        w = math.exp(-dist(s, x) ** 2 / (2 * h * h))
        rows.append((w, [1.0] + [fs[i] - fx[i] for i in dims], log_perf(family, c, s)))
    n = 1 + len(dims)
    a = [[sum(w * r[i] * r[j] for w, r, _ in rows) + (1e-6 if i == j else 0) for j in range(n)]
         for i in range(n)]
    b = [sum(w * r[i] * y for w, r, y in rows) for i in range(n)]
    # solve a z = b (small, Gaussian elimination)
    for i in range(n):
        p = max(range(i, n), key=lambda k: abs(a[k][i]))
        a[i], a[p], b[i], b[p] = a[p], a[i], b[p], b[i]
        for k in range(i + 1, n):
            f = a[k][i] / a[i][i]
            a[k] = [u - f * v for u, v in zip(a[k], a[i])]
            b[k] -= f * b[i]
    z = [0.0] * n
    for i in reversed(range(n)):
        z[i] = (b[i] - sum(a[i][j] * z[j] for j in range(i + 1, n))) / a[i][i]
    return min(z[0], 0.0)


def pick_linear(family, cands, x, h):
    return max(cands, key=lambda c: (local_linear(family, c, x, h),
                                     pick_weighted_score(family, c, x, h)))


def pick_weighted_score(family, c, x, h):
    return sum(math.exp(-dist(s, x) ** 2 / (2 * h * h)) * log_perf(family, c, s) for s in family)


def pick_bracket(family, cands, x, h=None):
    # the two nearest family sizes: the candidate with the best worse of the two
    near = sorted(family, key=lambda s: dist(s, x))[:2]
    return max(cands, key=lambda c: (min(perf(family[s], c) for s in near),
                                     sum(perf(family[s], c) for s in near)))


def pick_tree(family, cands, x, h=None):
    # one split on the first feature with at least two sizes each side (or none); each leaf
    # answers the candidate with the best mean log performance over its sizes
    sizes = sorted(family, key=lambda s: features(s))
    best = None
    for cut in [0] + list(range(2, len(sizes) - 1)):
        leaves = [sizes[:cut], sizes[cut:]] if cut else [sizes]
        score, picks = 0.0, []
        for leaf in leaves:
            c = max(cands, key=lambda c: sum(log_perf(family, c, s) for s in leaf))
            score += sum(log_perf(family, c, s) for s in leaf)
            picks.append((leaf, c))
        if best is None or score > best[0] + 1e-12:
            best = (score, picks)
    for leaf, c in best[1]:
        if leaf is best[1][-1][0] or features(x)[0] < (features(leaf[-1])[0] +
                                                       features(sizes[sizes.index(leaf[-1]) + 1])[0]) / 2:
            return c
    return best[1][-1][1]


SELECTORS = {
    "nearest": (pick_nearest, [None]),
    "weighted": (pick_weighted, [0.5, 1.0, 2.0, 4.0]),
    "bracket": (pick_bracket, [None]),
    "linear": (pick_linear, [0.5, 1.0, 2.0, 4.0]),
    "tree": (pick_tree, [None]),
}


def loso_score(family, per_size, fn, h):
    """The selector's mean and worst performance at each family size left out of the rest."""
    scores = []
    for x in family:
        rest = {s: t for s, t in family.items() if s != x}
        c = fn(rest, candidates(rest, per_size), x, h)
        scores.append(perf(family[x], c))
    return scores


def chosen(family, per_size):
    """The selector and setting of the best inner leave-one-size-out mean (ties: the simpler)."""
    best = None
    for name, (fn, hs) in SELECTORS.items():
        for h in hs:
            s = loso_score(family, per_size, fn, h)
            m = sum(math.log(max(v, 1e-3)) for v in s) / len(s)
            if best is None or m > best[0] + 1e-9:
                best = (m, name, fn, h)
    return best[1:]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("folder", nargs="?", default="db/recordings/sizes")
    ap.add_argument("--per-size", default="1,2,3,4")
    a = ap.parse_args()
    kernels = load(a.folder)
    print(f"{'kernel':15} {'per size':>8} {'selector':>14} {'mean':>6} {'worst':>6}")
    for kernel, sizes in kernels.items():
        for per_size in [int(v) for v in a.per_size.split(",")]:
            rows = {f"{n}{'' if h is None else ' h=' + str(h)}": loso_score(sizes, per_size, fn, h)
                    for n, (fn, hs) in SELECTORS.items() for h in hs}
            # nested: the selector chosen by leave-one-size-out within the family
            nested = []
            for x in sizes:
                rest = {s: t for s, t in sizes.items() if s != x}
                name, fn, h = chosen(rest, per_size)
                nested.append(perf(sizes[x], fn(rest, candidates(rest, per_size), x, h)))
            rows["chosen (nested)"] = nested
            for name, s in rows.items():
                print(f"{kernel:15} {per_size:8} {name:>14} {sum(s)/len(s):6.3f} {min(s):6.3f}  "
                      + " ".join(f"{v:.2f}" for v in s))
        print()


if __name__ == "__main__":
    sys.exit(main())
