#!/usr/bin/env python3
"""Where a tuning run's time went, from its timeline (`ktune tune --trace FILE`).

    bench/summarize_trace.py RUN.trace.json [...]   (or RUN.trace.json.gz)

For each file: the wall time; the GPU worker's preparation and first trial; the GPU's busy
share (its trials' spans over the wall, and after the first trial), and the GPU worker's time
outside its evaluations (the protocol, and the loop's own work between them); the GPU's idle time after
its first trial, split by what the compile threads did meanwhile (all busy: compilation bounds
the run; some idle: the loop or the queue did); the NVRTC programs (batches) by size, and the milliseconds per
configuration of each compile thread's first program and of the later ones; and, in
tenths of the wall, how many configurations were compiled and measured by then.
"""

import gzip
import json
import sys
from collections import Counter


def load(path):
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    lanes = {e["tid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    spans = [e for e in events if e.get("ph") == "X"]
    return lanes, spans


def union_length(intervals):
    total, end = 0.0, None
    for b, e in sorted(intervals):
        if end is None or b > end:
            total += e - b
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def gaps(intervals, start, stop):
    """The parts of [start, stop] that no interval covers."""
    out, at = [], start
    for b, e in sorted(intervals):
        if b > at:
            out.append((at, min(b, stop)))
        at = max(at, e)
        if at >= stop:
            break
    if at < stop:
        out.append((at, stop))
    return [(b, e) for b, e in out if e - b > 1e-6]  # not the rounding between spans


def covered(intervals, b, e):
    """How much of [b, e] the intervals cover."""
    return union_length([(max(b, x), min(e, y)) for x, y in intervals if y > b and x < e])


def summarize(path):
    lanes, spans = load(path)
    by_lane = {}
    for s in spans:
        by_lane.setdefault(lanes.get(s["tid"], str(s["tid"])), []).append(s)
    iv = lambda ss: [(s["ts"] * 1e-6, (s["ts"] + s["dur"]) * 1e-6) for s in ss]
    gpu = [s for s in by_lane.get("GPU worker", []) if s["name"] != "prepare"]
    prepare = [s for s in by_lane.get("GPU worker", []) if s["name"] == "prepare"]
    compile_lanes = {k: v for k, v in by_lane.items() if k.startswith("compile ")}
    # Times from the search's start (the run's wall time); the file's own zero may be the
    # process's start, which a "start: ..." span on the run's row covers.
    search = [s for s in by_lane.get("run", []) if s["name"] == "search"]
    zero = search[0]["ts"] * 1e-6 if search else 0.0
    for s in spans:
        s["ts"] -= zero * 1e6
    wall = max((s["ts"] + s["dur"]) * 1e-6 for s in spans) if spans else 0.0
    if search:
        wall = search[0]["dur"] * 1e-6
    lines = [f"{path}:"]
    start = [s for s in by_lane.get("run", []) if s["name"].startswith("start")]
    if start:
        lines.append(f"  before the run {start[0]['dur'] * 1e-6:.3f} s ({start[0]['name']})")
        # Its steps: the run row's other spans that end before the search.
        steps = [s for s in by_lane.get("run", [])
                 if s is not start[0] and s["name"] != "search" and s["ts"] < 0
                 and s["ts"] + s["dur"] <= 1]
        if steps:
            lines.append("    " + ", ".join(f"{s['name']} {s['dur'] * 1e-6:.3f}"
                                           for s in sorted(steps, key=lambda s: s["ts"])))
    if not gpu:
        return "\n".join(lines + ["  no measured trials"])
    gpu_iv = iv(gpu)
    first = min(b for b, _ in gpu_iv)
    busy = union_length(gpu_iv)
    lines.append(f"  wall {wall:.3f} s (search), {len(gpu)} trials measured, "
                 f"first trial at {first:.3f} s")
    after = [s for s in by_lane.get("run", []) if s["name"] == "the best and the run's record"]
    if after:
        lines.append(f"  after the search {after[0]['dur'] * 1e-6:.3f} s (the finalists, the best "
                     "and its CUBIN stored, the run's record)")
    if prepare:
        p = prepare[0]
        phases = ", ".join(f"{k} {v:.3f}" for k, v in p.get("args", {}).items())
        lines.append(f"  preparation {p['ts'] * 1e-6:.3f}-{(p['ts'] + p['dur']) * 1e-6:.3f} s"
                     + (f" ({phases})" if phases else ""))
    lines.append(f"  GPU worker busy {busy:.3f} s: {busy / wall:.0%} of the wall, "
                 f"{busy / max(wall - first, 1e-9):.0%} after the first trial")
    if all("eval_ms" in s.get("args", {}) for s in gpu):
        gpu_ms = sum(s["args"].get("gpu_ms", 0) for s in gpu) * 1e-3
        eval_s = sum(s["args"]["eval_ms"] for s in gpu) * 1e-3
        lines.append(f"  of it: the GPU's own work {gpu_ms:.3f} s, the rest of the evaluations "
                     f"{eval_s - gpu_ms:.3f} s, outside them {busy - eval_s:.3f} s "
                     f"({(busy - eval_s) / len(gpu) * 1e3:.2f} ms per trial)")
    comp_iv = {k: iv(v) for k, v in compile_lanes.items()}
    n_threads = len(comp_iv)
    idle = gaps(gpu_iv, first, wall)
    if n_threads:
        all_busy = some_idle = 0.0
        for b, e in idle:
            # Split each gap at the compile spans' edges and count the busy threads per piece.
            cuts = sorted({b, e} | {x for ivs in comp_iv.values() for pair in ivs for x in pair
                                    if b < x < e})
            for x, y in zip(cuts, cuts[1:]):
                mid = (x + y) / 2
                working = sum(any(s <= mid < t for s, t in ivs) for ivs in comp_iv.values())
                if working == n_threads:
                    all_busy += y - x
                else:
                    some_idle += y - x
        lines.append(f"  GPU idle after the first trial {sum(e - b for b, e in idle):.3f} s in "
                     f"{len(idle)} gaps: {all_busy:.3f} s with all {n_threads} compile threads "
                     f"busy, {some_idle:.3f} s with some idle")
        sizes = Counter(s["args"]["configurations"] for v in compile_lanes.values() for s in v
                        if s["args"].get("compiled", 0) > 0)
        # Milliseconds per configuration in each thread's first NVRTC program (a cold process,
        # all threads starting at once) and in the programs after it.
        first_progs, later_progs = [], []
        for v in compile_lanes.values():
            progs = sorted((s for s in v if s["args"].get("compiled", 0) > 0),
                           key=lambda s: s["ts"])
            first_progs += progs[:1]
            later_progs += progs[1:]
        for label, progs in (("first", first_progs), ("later", later_progs)):
            if progs:
                n = sum(s["args"]["compiled"] for s in progs)
                ms = sum(s["dur"] for s in progs) * 1e-3
                lines.append(f"  NVRTC {label} programs: {len(progs)} of {n} configurations, "
                             f"{ms / n:.1f} ms per configuration")
        per_thread = [union_length(v) for v in comp_iv.values()]
        lines.append("  NVRTC programs by configurations: "
                     + ", ".join(f"{k} x{sizes[k]}" for k in sorted(sizes)))
        lines.append(f"  compile threads busy {sum(per_thread) / n_threads / wall:.0%} of the wall "
                     f"on average ({min(per_thread):.3f}-{max(per_thread):.3f} s each)")
        first_batch = min(e for ivs in comp_iv.values() for _, e in ivs)
        lines.append(f"  first NVRTC program done at {first_batch:.3f} s")
        # Compiled and measured by each tenth of the wall.
        done = sorted(((s["ts"] + s["dur"]) * 1e-6, s["args"]["configurations"])
                      for v in compile_lanes.values() for s in v)
        measured = sorted(e for _, e in gpu_iv)
        row_c, row_m = [], []
        for k in range(1, 11):
            t = wall * k / 10
            row_c.append(str(sum(n for e, n in done if e <= t)))
            row_m.append(str(sum(1 for e in measured if e <= t)))
        lines.append("  by tenths of the wall, compiled: " + " ".join(row_c))
        lines.append("                         measured: " + " ".join(row_m))
    return "\n".join(lines)


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    status = 0
    for path in argv[1:]:
        try:
            print(summarize(path))
        except (OSError, ValueError, KeyError) as e:
            print(f"{path}: not a ktune timeline ({e})", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
