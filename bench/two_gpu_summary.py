#!/usr/bin/env python3
"""The table rows of bench/two_gpu.sh, from the runs' --json outputs and databases.

usage: two_gpu_summary.py OUT_DIR rate NAME...            rate, GPU share per device, speed-up
       two_gpu_summary.py OUT_DIR same-best DB1 DB2 KERNEL PROBLEM_KEY
       two_gpu_summary.py OUT_DIR shared DB0 DB1 FLEET_DB
       two_gpu_summary.py OUT_DIR kill NAME DB SPACE_JSON
       two_gpu_summary.py OUT_DIR halves DB
"""
import json
import os
import sqlite3
import sys
from collections import Counter


def load(out, name):
    with open(os.path.join(out, name + ".json")) as f:
        text = f.read()
    with open(os.path.join(out, name + ".wall")) as f:
        wall = float(f.read())
    return (json.loads(text) if text.strip() else {}), wall


def workers(doc):
    """A run's per-device objects: one for a one-device run, one per worker for --devices."""
    return doc.get("workers", [doc]) if doc else []


def rate(out, names):
    base = None
    print("run | devices | measured | wall s | cfg/s (command) | speed-up | "
          "per device: measured, cfg/s (its own wall), GPU share, best")
    for name in names:
        doc, wall = load(out, name)
        ws = workers(doc)
        measured = sum(w.get("measured", 0) for w in ws)
        r = measured / wall if wall > 0 else 0.0
        base = base or r
        per = "; ".join(
            f"dev {w.get('device', '-')}: {w.get('measured', 0)} measured, "
            f"{w.get('measured', 0) / max(w.get('wall_seconds', 0), 1e-9):.1f} cfg/s, "
            f"GPU {100 * w.get('gpu_share', 0):.0f}%, "
            f"backend {w.get('backend_seconds', 0):.1f} s, store {w.get('store_seconds', 0):.1f} s, "
            f"claim waits {w.get('wait_claim_seconds', 0):.1f} s, "
            f"{(w.get('best') or {}).get('time_ms', float('nan')):.4f} ms"
            + (f", {w['worker_restarts']} restarts" if w.get("worker_restarts") else "")
            for w in ws)
        print(f"{name} | {len(ws)} | {measured} | {wall:.1f} | {r:.1f} | {r / base:.2f}x | {per}")


def best_of(db, kernel, problem):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    row = con.execute(
        """SELECT t.config_key, t.time_ms FROM best b JOIN trials t ON t.id = b.trial_id
           WHERE b.kernel_name = ? AND b.problem_key = ?""", (kernel, problem)).fetchone()
    return row


def times_of(db, key):
    """Search and re-time medians of one configuration in a database (ms)."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = con.execute("SELECT kind, time_ms FROM trials WHERE config_key = ? AND status = 0",
                       (key,)).fetchall()
    return {k: [round(t, 5) for kk, t in rows if kk == k] for k in (0, 1)}


def same_best(db1, db2, kernel, problem):
    b1, b2 = best_of(db1, kernel, problem), best_of(db2, kernel, problem)
    if not b1 or not b2:
        print(f"same best: a database has no best ({b1}, {b2})")
        return
    if b1[0] == b2[0]:
        print(f"same best: yes, {b1[0]} ({b1[1]:.4f} ms one device, {b2[1]:.4f} ms two)")
        return
    print(f"same best: no; one device {b1[0]} {b1[1]:.4f} ms, two devices {b2[0]} {b2[1]:.4f} ms, "
          f"{100 * (b2[1] / b1[1] - 1):+.2f}%")
    for label, db in (("one-device run", db1), ("two-device run", db2)):
        for key in (b1[0], b2[0]):
            t = times_of(db, key)
            print(f"  {label}: {key}: search {t[0]} ms, re-timed {t[1]} ms")


def shared(db0, db1, fleet):
    keys = Counter()
    per = []
    for db in (db0, db1):
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        rows = [k for (k,) in con.execute("SELECT config_key FROM trials WHERE kind = 0")]
        per.append(len(rows))
        keys.update(rows)
    twice = sum(1 for c in keys.values() if c > 1)
    con = sqlite3.connect(f"file:{fleet}?mode=ro", uri=True)
    n_fleet = con.execute("SELECT count(*) FROM trials WHERE kind = 0").fetchone()[0]
    runs = con.execute("SELECT count(*), count(DISTINCT pid) FROM runs").fetchone()
    best = con.execute(
        """SELECT d.name, t.config_key, t.time_ms FROM best b JOIN trials t ON t.id = b.trial_id
           JOIN devices d ON d.id = b.device_id""").fetchall()
    print(f"shared journal study: process 0 measured {per[0]}, process 1 {per[1]}; distinct "
          f"configurations {len(keys)}, measured twice {twice}; merged database: {n_fleet} search "
          f"trials, {runs[0]} runs; bests: {best}")


def kill(out, name, db, space):
    doc, wall = load(out, name)
    with open(space) as f:
        valid = json.load(f)["valid"]
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    distinct = con.execute("SELECT count(DISTINCT config_key) FROM trials WHERE kind = 0").fetchone()[0]
    statuses = dict(con.execute("SELECT status, count(*) FROM trials WHERE kind = 0 GROUP BY status"))
    runs = con.execute("SELECT status, count(*) FROM runs GROUP BY status").fetchall()
    ws = workers(doc)
    print(f"kill: exits {[w.get('worker_exit') for w in ws]}, restarts "
          f"{[w.get('worker_restarts') for w in ws]}, wall {wall:.1f} s; distinct configurations "
          f"{distinct} of {valid} valid; trial statuses {statuses}; runs {runs}; bests "
          f"{[(w.get('device'), (w.get('best') or {}).get('key')) for w in ws]}")


def halves(db):
    """Work in the two halves of a one-device brute force's order: what two parts split."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = con.execute("SELECT eval_ms FROM trials WHERE kind = 0 ORDER BY id").fetchall()
    h = len(rows) // 2
    a, b = (sum(r[0] or 0 for r in part) / 1e3 for part in (rows[:h], rows[h:]))
    print(f"one device's evaluation time: first half of the order {a:.1f} s, second half {b:.1f} s")


def main():
    out, mode, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
    if mode == "rate":
        rate(out, rest)
    elif mode == "same-best":
        same_best(*rest)
    elif mode == "shared":
        shared(*rest)
    elif mode == "halves":
        halves(*rest)
    elif mode == "kill":
        kill(out, *rest)
    else:
        sys.exit(f"two_gpu_summary.py: unknown mode {mode}")


if __name__ == "__main__":
    main()
