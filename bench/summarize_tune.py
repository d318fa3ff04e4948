#!/usr/bin/env python3
"""Summarises `ktune tune --json` outputs and the database behind them: the figures a
throughput or brute-force report needs, as one table row per run, plus per-variant bests.

usage: summarize_tune.py [--db DB --variants PROBLEM_KEY] [--kernel-tuner DIR] LABEL=RUN.json ...

With --kernel-tuner, DIR holds Kernel Tuner's summaries of the same space from the same call
(summary_itN.json, written by its run.sh for N iterations): each ktune run labelled samplesN is
set beside the one of N iterations, and the ratio of their rates printed.
"""
import argparse
import json
import os
import re
import sqlite3


def row(label, path):
    d = json.load(open(path))
    wall = d["wall_seconds"]
    best = d.get("best") or {}
    phases = d.get("phases_seconds", {})
    return {
        "run": label,
        "trials": d["trials"],
        "measured": d["measured"],
        "statuses": " ".join(f"{k}={v}" for k, v in sorted(d["by_status"].items())),
        "wall_s": round(wall, 2),
        "first_s": round(d.get("first_result_seconds", float("nan")), 2),
        "prepare_s": round(d.get("prepare_seconds", float("nan")), 2),
        "wait_prepare_s": round(d.get("wait_prepare_seconds", float("nan")), 2),
        "search_s": round(d.get("search_seconds", float("nan")), 2),
        "cfg_per_s": round(d["configs_per_second"], 1),
        "gpu_share": f'{100 * d["gpu_share"]:.0f}%',
        "timed_share": f'{100 * d["timed_share"]:.0f}%',
        "compile_s": round(d["compile_seconds"], 1),
        "wait_compile_s": round(d["wait_compile_seconds"], 2),
        "backend_s": round(d["backend_seconds"], 2),
        "best_ms": round(best.get("time_ms", float("nan")), 4),
        "best_GBps": round(best.get("gbps") or float("nan"), 1),
        "best": best.get("key", "-"),
        "verify_share": f'{100 * (phases.get("verify", 0) + phases.get("post_verify", 0)) / wall:.0f}%'
        if wall > 0 else "-",
        "compile_ms_per_cfg": round(1e3 * d["compile_seconds"] / max(d["measured"], 1), 1),
        "clocks": clocks(d.get("gpu_clocks")),
        "prepare_phases_s": " ".join(f"{k}={v:.3f}" for k, v in sorted(d.get("prepare_phases_seconds", {}).items())),
        "phases_s": " ".join(f"{k}={v:.2f}" for k, v in sorted(phases.items()) if v >= 0.005),
    }


def clocks(c):
    if not c:
        return "-"
    flag = " DROPPED" if c.get("dropped") else ""
    return f'SM {c["sm_min_mhz"]}-{c["sm_max_mhz"]} MHz {c["temperature_min_c"]}-{c["temperature_max_c"]}C{flag}'


def per_variant(db, problem_key):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = con.execute(
        """SELECT t.config_json, t.time_ms, t.gbps FROM trials t JOIN problems p ON p.id = t.problem_id
           JOIN kernels k ON k.id = t.kernel_id
           WHERE k.name = 'reduce' AND p.key = ? AND t.status = 0 AND t.time_ms IS NOT NULL""",
        (problem_key,)).fetchall()
    best = {}
    for cfg, ms, gbps in rows:
        v = json.loads(cfg)["variant"]
        if v not in best or ms < best[v][0]:
            best[v] = (ms, gbps, cfg)
    return best


def bound(d):
    """The rate a run could reach at most, and what sets it: its compile processes busy from start
    to end (compile_threads over NVRTC's time per configuration), or the GPU busy from start to end
    (trials over gpu_seconds); None where the run's JSON lacks what either needs."""
    limits = []
    measured = d.get("measured", 0)
    if d.get("compile_threads", 0) > 0 and d.get("compile_seconds", 0) > 0 and measured > 0:
        limits.append((d["compile_threads"] * measured / d["compile_seconds"], "nvrtc"))
    if d.get("gpu_seconds", 0) > 0:
        limits.append((d["trials"] / d["gpu_seconds"], "gpu"))
    return min(limits) if limits else None


def against_kernel_tuner(runs, kt_dir):
    """Rows pairing each ktune run labelled samplesN with Kernel Tuner's run of N iterations."""
    out = []
    for label, path in runs:
        m = re.fullmatch(r"samples(\d+)", label)
        if not m:
            continue
        kt_path = os.path.join(kt_dir, f"summary_it{m.group(1)}.json")
        if not os.path.exists(kt_path):
            continue
        d = json.load(open(path))
        kt = json.load(open(kt_path))
        ours, theirs = d["configs_per_second"], kt["configs_per_s"]
        limit = bound(d)
        out.append({
            "samples": int(m.group(1)),
            "ktune_cfg_per_s": round(ours, 1),
            "kernel_tuner_cfg_per_s": round(theirs, 2),
            "ratio": f"{ours / theirs:.1f}x" if theirs > 0 else "-",
            # The same with ktune's start (options, the device query, the database, from the
            # process's start) counted too: Kernel Tuner's rate counts its tune_kernel call.
            "ratio_with_start": (f'{d["measured"] / (d["start_seconds"] + d["wall_seconds"]) / theirs:.1f}x'
                                 if theirs > 0 and "start_seconds" in d else "-"),
            "ktune_gpu_busy": f'{100 * d["gpu_share"]:.0f}%',
            "ktune_nvrtc_ms_per_cfg": round(1e3 * d["compile_seconds"] / max(d["measured"], 1), 1),
            "kernel_tuner_compile_ms": round(kt.get("median_ms", {}).get("compile_time", float("nan")), 1),
            "kernel_tuner_valid": f'{kt.get("valid", "-")}/{kt.get("total", "-")}',
            # What a perfect pipeline would reach on this run's own costs, and how near it came.
            "ktune_bound_cfg_per_s": f"{limit[0]:.1f} ({limit[1]})" if limit else "-",
            "of_bound": f"{100 * ours / limit[0]:.0f}%" if limit else "-",
            "ratio_at_bound": f"{limit[0] / theirs:.1f}x" if limit and theirs > 0 else "-",
        })
    return out


def print_table(rows):
    keys = list(rows[0].keys())
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for r in rows:
        print("| " + " | ".join(str(r[k]) for k in keys) + " |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="*")
    ap.add_argument("--db")
    ap.add_argument("--variants")
    ap.add_argument("--kernel-tuner", metavar="DIR")
    a = ap.parse_args()
    runs = [tuple(r.split("=", 1)) for r in a.runs]
    rows = [row(*r) for r in runs]
    if rows:
        print_table(rows)
    if a.kernel_tuner:
        pairs = against_kernel_tuner(runs, a.kernel_tuner)
        if not pairs:
            ap.error(f"--kernel-tuner {a.kernel_tuner}: no summary_itN.json there for a run "
                     "labelled samplesN")
        print("\nktune against Kernel Tuner, same space, same call (cold compile caches)")
        print_table(pairs)
    if a.db and a.variants:
        lecture = {1: 2.083, 2: 4.854, 3: 9.741, 4: 17.377, 5: 31.289, 6: 43.996, 7: 62.671}
        print(f"\nper-variant best at {a.variants} (lecture: 2^22 ints on a G80)")
        print("| variant | best ms | GB/s | lecture GB/s | best config |")
        print("|---|---|---|---|---|")
        for v, (ms, gbps, cfg) in sorted(per_variant(a.db, a.variants).items()):
            print(f"| {v} | {ms:.4f} | {gbps:.1f} | {lecture.get(v, '-')} | {cfg} |")


if __name__ == "__main__":
    main()
