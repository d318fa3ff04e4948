#!/usr/bin/env python3
"""The headline figure of issue 52 (bench/headline/README.md), measured in one call: on each
space, the time ktune's default search and Kernel Tuner 1.4's strategies take to reach within
2% of the space's optimum, brute-forced beforehand in the same call by each tool on its own
space. Writes OUT/runs.json (every run, every evaluation's finish time, both brute-force
tables); bench/headline/summarize.py turns it into the table.

    headline.py --ktune build-gpu/tuner/ktune --peer .peers/kernel_tuner --out OUT [options]

ktune: one `ktune tune` process per run, a fresh database and an empty compile cache each; the
brute force with `--strategy brute_force --retime-top 0`, each search with KTUNE_SEARCH and
`--seed S`. An evaluation's finish time is its trial's `created_at` in the database (stored as
the trial completes, milliseconds), counted from just before the process was started.
Kernel Tuner: one process per space (bench/headline/kt_search.py): its brute force, then every
strategy once per seed.
"""
import argparse
import datetime
import json
import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# ktune's default search: auto at the default effort level (docs/effort.md); --strategy auto
# stays because the job files name brute_force.
KTUNE_SEARCH = "--strategy auto --effort default"
# The spaces: ktune's job file and Kernel Tuner's space of its reduce.cu (kt_search.SPACES).
SPACES = {
    "kt270": {"ktune_job": "configs/reduce-kt270.toml", "kt_space": "kt270"},
    "wide": {"ktune_job": "bench/headline/reduce-wide.toml", "kt_space": "wide"},
}
# The share of Kernel Tuner's time each space gets (its brute force alone is ~2x on wide).
KT_SHARE = {"kt270": 0.4, "wide": 0.6}


def utc_epoch(stamp):
    """ktune's ISO 8601 UTC timestamp (2026-11-22T10:00:00.123Z) as seconds since 1970."""
    stamp = stamp.rstrip("Z")
    fmt = "%Y-%m-%dT%H:%M:%S.%f" if "." in stamp else "%Y-%m-%dT%H:%M:%S"
    d = datetime.datetime.strptime(stamp, fmt).replace(tzinfo=datetime.timezone.utc)
    return d.timestamp()


def read_db(path):
    """The database's run and its evaluations, in the order they finished: (started_at as
    epoch seconds, the strategy auto chose, [(created_at epoch, config_key, time_ms or None)]).
    Re-timings (kind 1) are not evaluations of the search: they time again what it evaluated."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        run = con.execute("SELECT started_at, strategy_chosen FROM runs ORDER BY id LIMIT 1").fetchone()
        rows = con.execute("SELECT created_at, config_key, status, time_ms FROM trials "
                           "WHERE kind != 1 ORDER BY id").fetchall()
    finally:
        con.close()
    evals = [(utc_epoch(c), k, t if s == 0 and t is not None else None) for c, k, s, t in rows]
    if not run:
        return None, None, evals
    return utc_epoch(run[0]), run[1], evals


def run_ktune(ktune, args, db, log, env, timeout):
    """One `ktune tune` process, timed from just before it starts: its run as a dict."""
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)
    cache = tempfile.mkdtemp(prefix="ktune-headline-cache-")
    cmd = [ktune, "tune"] + args + ["--no-reuse", "--db", db, "--json"]
    e = dict(env, KTUNE_CACHE_DIR=cache)
    with open(log + ".json", "w") as out, open(log + ".err", "w") as err:
        launch = time.time()
        try:
            rc = subprocess.run(cmd, stdout=out, stderr=err, env=e, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
        exit_s = time.time() - launch
    shutil.rmtree(cache, ignore_errors=True)
    run = {"command": " ".join(shlex.quote(c) for c in cmd[1:]), "rc": rc, "exit_s": round(exit_s, 4)}
    try:
        started, chosen, evals = read_db(db)
    except sqlite3.Error as x:
        run["error"] = f"the database: {x}"
        return run
    if started is None:
        run["error"] = "no run in the database"
        return run
    run["strategy_chosen"] = chosen
    run["start_s"] = round(started - launch, 4)
    run["evals"] = [[round(c - started, 4), k, t] for c, k, t in evals]
    run["end_s"] = run["evals"][-1][0] if run["evals"] else 0.0
    return run


def ktune_space(a, name, deadline):
    job = SPACES[name]["ktune_job"]
    extra = shlex.split(a.ktune_extra)
    env = dict(os.environ, CUDA_CACHE_DISABLE="1")
    d = {"tool": "ktune", "job": job, "search": a.ktune_search, "within": a.within}
    log = os.path.join(a.out, f"ktune-{name}")
    brute = run_ktune(a.ktune, ["--config", job, "--strategy", "brute_force", "--retime-top", "0"] + extra,
                      log + "-brute.db", log + "-brute", env, a.run_timeout)
    table = {k: t for _, k, t in brute.get("evals", [])}
    valid = [t for t in table.values() if t is not None]
    d["brute"] = {"status": "ok" if valid and brute["rc"] == 0 else "failed", "rc": brute["rc"],
                  "wall_s": brute["exit_s"], "configs": len(table), "valid": len(valid),
                  "optimum_ms": min(valid) if valid else None, "table": table,
                  "command": brute["command"]}
    if "error" in brute:
        d["brute"]["error"] = brute["error"]
    d["runs"] = []
    if d["brute"]["status"] != "ok":
        return d
    search = shlex.split(a.ktune_search)
    for seed in range(1, a.seeds + 1):
        run = {"strategy": "default", "seed": seed}
        d["runs"].append(run)
        if time.time() > deadline:
            run.update(status="skipped", error="out of time: the step's time was spent before this run")
            continue
        r = run_ktune(a.ktune, ["--config", job] + search + ["--seed", str(seed)] + extra,
                      f"{log}-s{seed}.db", f"{log}-s{seed}", env, a.run_timeout)
        run.update(r)
        if "error" in r or r["rc"] != 0:
            run["status"] = "failed"
            run.setdefault("error", f"ktune tune exit status {r['rc']} ({log}-s{seed}.err)")
        else:
            run["status"] = "done"  # whether it reached the target is the summary's to say
    return d


def kt_space(a, name, deadline):
    path = os.path.join(a.out, f"kt-{name}.json")
    if os.path.exists(path):
        os.remove(path)
    site = os.path.join(a.peer, "site")
    env = dict(os.environ, CUDA_CACHE_DISABLE="1", PYTHONUNBUFFERED="1",
               PYTHONPATH=site + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else ""))
    cmd = [a.python, os.path.join(HERE, "kt_search.py"), "--peer", a.peer, "--space", SPACES[name]["kt_space"],
           "--out", path, "--deadline", f"{deadline:.3f}", "--strategies", a.strategies,
           "--seeds", str(a.seeds), "--iterations", str(a.iterations), "--limit", str(a.kt_limit),
           "--within", str(a.within)]
    if a.kt_simulate:
        cmd += ["--simulate", a.kt_simulate.replace("SPACE", name)]
    with open(os.path.join(a.out, f"kt-{name}.log"), "w") as log:
        launch = time.time()
        cmd += ["--launch", f"{launch:.6f}"]
        try:
            # Past the deadline, a run still going is at most one limit long, then the brute force
            # of a slow start: two minutes more and it is killed.
            rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                                timeout=max(deadline - launch, 0) + a.kt_limit + 120).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
    try:
        with open(path) as f:
            d = json.load(f)
    except (OSError, ValueError) as x:
        d = {"tool": "kernel_tuner", "brute": {"status": "failed", "error": f"no results ({x})"}}
    d["rc"] = rc
    return d


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ktune", required=True, help="the ktune binary")
    ap.add_argument("--peer", default=".peers/kernel_tuner", help="the Kernel Tuner folder (site/, reduce.cu)")
    ap.add_argument("--out", required=True, help="the folder of the runs' files and runs.json")
    ap.add_argument("--spaces", default="kt270,wide")
    ap.add_argument("--tools", default="ktune,kernel_tuner")
    ap.add_argument("--strategies", default="genetic_algorithm,dual_annealing,greedy_ils,bayes_opt,random_sample",
                    help="Kernel Tuner's strategies")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=7, help="Kernel Tuner's timed runs per configuration")
    ap.add_argument("--ktune-search", default=KTUNE_SEARCH, help=f"ktune's search options (default: {KTUNE_SEARCH})")
    ap.add_argument("--ktune-extra", default="", help="more options of every ktune run (--samples N; --replay FILE)")
    ap.add_argument("--kt-limit", type=float, default=15.0, help="seconds of one Kernel Tuner search run at most")
    ap.add_argument("--kt-simulate", default="", help="Kernel Tuner cache to replay instead of the GPU; "
                    "SPACE in it is replaced by the space's name (testing without a GPU)")
    ap.add_argument("--within", type=float, default=0.02)
    ap.add_argument("--seconds", type=float, default=330.0, help="the whole call's time")
    ap.add_argument("--run-timeout", type=float, default=150.0, help="each ktune process is killed after this")
    ap.add_argument("--python", default=sys.executable, help="the Python that runs Kernel Tuner")
    a = ap.parse_args()
    t0 = time.time()
    deadline = t0 + a.seconds
    os.makedirs(a.out, exist_ok=True)
    spaces = [s for s in a.spaces.split(",") if s]
    tools = [t for t in a.tools.split(",") if t]
    for s in spaces:
        if s not in SPACES:
            sys.exit(f"headline.py: unknown space {s} (known: {', '.join(SPACES)})")
    doc = {"within": a.within, "seeds": a.seeds, "seconds": a.seconds, "ktune_search": a.ktune_search,
           "ktune_extra": a.ktune_extra, "kt_limit_s": a.kt_limit, "iterations": a.iterations,
           "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "spaces": {s: {} for s in spaces}}
    runs_json = os.path.join(a.out, "runs.json")

    def save():
        with open(runs_json + ".tmp", "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(runs_json + ".tmp", runs_json)

    # ktune first: its runs are short and its share of the time small; Kernel Tuner's spaces
    # then share what is left, the wide one the larger part and whatever kt270 leaves.
    if "ktune" in tools:
        for s in spaces:
            doc["spaces"][s]["ktune"] = ktune_space(a, s, deadline)
            save()
            print(f"ktune {s}: {time.time() - t0:.1f} s", flush=True)
    if "kernel_tuner" in tools:
        for i, s in enumerate(spaces):
            left = deadline - time.time()
            share = sum(KT_SHARE.get(x, 1.0) for x in spaces[i:])
            kt_deadline = time.time() + left * KT_SHARE.get(s, 1.0) / share
            doc["spaces"][s]["kernel_tuner"] = kt_space(a, s, kt_deadline)
            save()
            print(f"kernel_tuner {s}: {time.time() - t0:.1f} s", flush=True)
    doc["wall_s"] = round(time.time() - t0, 2)
    save()
    print(f"headline: {doc['wall_s']:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
