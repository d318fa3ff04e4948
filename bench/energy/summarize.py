#!/usr/bin/env python3
"""The time-energy Pareto set of each ktune database given (docs/energy.md#measured): per
(kernel, device, problem), its members fastest first, and what the least-energy member saves
against the fastest and what it costs in time. Reads the databases only.

    summarize.py DB [DB ...]
"""
import sqlite3
import sys


def summarize(path):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    groups = db.execute(
        "SELECT DISTINCT pa.kernel_id, pa.device_id, pa.problem_id, k.name, p.key, d.name "
        "FROM pareto pa JOIN kernels k ON k.id = pa.kernel_id JOIN problems p ON "
        "p.id = pa.problem_id JOIN devices d ON d.id = pa.device_id").fetchall()
    if not groups:
        print(f"{path}: no Pareto set (no trial has an energy)")
    for kernel_id, device_id, problem_id, kernel, problem, device in groups:
        rows = db.execute(
            "SELECT t.config_key, t.time_ms, t.energy_j, t.power_w FROM pareto pa JOIN trials t "
            "ON t.id = pa.trial_id WHERE pa.kernel_id = ? AND pa.device_id = ? AND "
            "pa.problem_id = ? ORDER BY t.time_ms", (kernel_id, device_id, problem_id)).fetchall()
        measured = db.execute(
            "SELECT count(DISTINCT config_key) FROM trials WHERE kernel_id = ? AND device_id = ? "
            "AND problem_id = ? AND energy_j > 0", (kernel_id, device_id, problem_id)).fetchone()[0]
        fastest, least = rows[0], min(rows, key=lambda r: r[2])
        print(f"{kernel} [{problem}] on {device}: {len(rows)} of {measured} configurations with "
              "an energy on the Pareto set")
        for key, ms, joules, watts in rows:
            print(f"  {ms:9.4f} ms {joules * 1e3:10.4g} mJ {watts:6.0f} W  {key}")
        print(f"  least energy saves {100 * (1 - least[2] / fastest[2]):.1f}% of the fastest's "
              f"energy at {100 * (least[1] / fastest[1] - 1):.1f}% more time")


def main(paths):
    if not paths:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    for path in paths:
        try:
            summarize(path)
        except sqlite3.Error as e:
            print(f"{path}: {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
