#!/usr/bin/env python3
"""The headline table (bench/headline/README.md) from bench/headline/headline.py's runs.json:
per space, per tool and strategy, the time to reach within 2% of the space's brute-forced
optimum (median, min-max over the seeds), the evaluations it took, how many seeds reached it,
and Kernel Tuner's best strategy against ktune.

    summarize.py OUT/runs.json [--json SUMMARY.json]

A run has reached the target at the first evaluation whose configuration's brute-force time
(the tool's own brute force of its own space, in the same call) is at most (1 + within) times
that brute force's optimum; the run's own, noisier, time of it is not used. Times count from
just before the tool's process started: ktune's runs each have their own process; Kernel
Tuner's runs of one space share one, whose start (Python, imports, input data, CUDA context) is
measured once and added to every run, with its strategy's imports. "from call" leaves every
start out on both sides.

A run that did not reach the target counts as the time it stopped (its limit: Kernel Tuner's
time limit, ktune's last evaluation within its budget), a lower bound of its time to the target;
a median that such a value can move is printed with ">=", a ratio it makes one-sided with ">="
or "<=", and "n/a" where both sides are bounds.
"""
import argparse
import json
import sys


def reaching(evals, table, optimum, within):
    """The first evaluation of a run that reaches the target: (index from 1, seconds since the
    run's call), or None. evals: [[seconds since call, key, own time or None], ...] in the order
    they finished; table: key -> brute-force time (None for a failed configuration)."""
    bound = (1 + within) * optimum
    for i, (t, key, _own) in enumerate(evals):
        brute = table.get(key)
        if brute is not None and brute <= bound:
            return i + 1, t
    return None


def judge(run, table, optimum, within, start_s):
    """One run judged: its status and, for a run that ran, its times and evaluations, each as
    (value, lower_bound) where lower_bound says the run stopped before the target."""
    status = run.get("status")
    if status in ("could not run", "skipped", "failed"):
        return {"status": status, "error": run.get("error", "")}
    evals = run.get("evals", [])
    hit = reaching(evals, table, optimum, within)
    if hit:
        n, t = hit
        return {"status": "reached", "evals": (n, False), "call": (t, False), "launch": (t + start_s, False)}
    end = max(run.get("end_s", 0.0), evals[-1][0] if evals else 0.0)
    return {"status": "not reached", "evals": (len(evals), True), "call": (end, True),
            "launch": (end + start_s, True)}


def median(values):
    """The median of (value, lower_bound) pairs and whether it is only a lower bound: it is
    when a run that stopped short has a value at or below the upper middle one, for its true
    value may lie above and move the median."""
    if not values:
        return None, False
    s = sorted(values, key=lambda v: v[0])
    n = len(s)
    mid = s[n // 2][0] if n % 2 else (s[n // 2 - 1][0] + s[n // 2][0]) / 2
    upper = s[n // 2][0]
    return mid, any(lb and v <= upper for v, lb in s)


def ratio(kt, kn):
    """Kernel Tuner's median over ktune's, each (value, lower_bound): (ratio, qualifier)."""
    if kt[0] is None or kn[0] is None or kn[0] <= 0:
        return None, "n/a"
    if kt[1] and kn[1]:
        return None, "n/a"
    return kt[0] / kn[0], ">=" if kt[1] else "<=" if kn[1] else "="


def row(name, judged):
    """A tool's or strategy's figures over its seeds."""
    ran = [j for j in judged if j["status"] in ("reached", "not reached")]
    r = {"name": name, "seeds": len(ran), "reached": sum(j["status"] == "reached" for j in ran),
         "skipped": sum(j["status"] == "skipped" for j in judged),
         "failed": [j["error"] for j in judged if j["status"] == "failed"],
         "could_not_run": next((j["error"] for j in judged if j["status"] == "could not run"), None)}
    for k in ("launch", "call", "evals"):
        m, lb = median([j[k] for j in ran])
        r[k] = {"median": m, "lower_bound": lb}
    if ran:
        r["launch"]["min"] = min(j["launch"][0] for j in ran)
        r["launch"]["max"] = max(j["launch"][0] for j in ran)
        r["launch"]["max_lower_bound"] = any(j["launch"][1] and j["launch"][0] >= r["launch"]["max"] for j in ran)
    return r


def tool_rows(tool, within, default_name):
    """Rows of one tool on one space, with its brute force."""
    brute = tool.get("brute", {})
    if brute.get("status") != "ok" or brute.get("optimum_ms") is None:
        return {"brute": {"status": "failed", "error": brute.get("error", "")}, "rows": []}
    table, optimum = brute["table"], brute["optimum_ms"]
    near = sum(1 for v in table.values() if v is not None and v <= (1 + within) * optimum)
    by = {}
    for run in tool.get("runs", []):
        start = run.get("start_s", tool.get("start_s", 0.0)) or 0.0
        by.setdefault(run.get("strategy", default_name), []).append(judge(run, table, optimum, within, start))
    return {"brute": {"status": "ok", "configs": brute.get("configs", len(table)), "valid": brute.get("valid"),
                      "optimum_ms": optimum, "within_target": near, "wall_s": brute.get("wall_s")},
            "rows": [row(name, judged) for name, judged in by.items()]}


def summarize(doc):
    """The whole summary of a runs.json document, as plain data."""
    within = doc.get("within", 0.02)
    out = {"within": within, "seeds": doc.get("seeds"), "ktune_search": doc.get("ktune_search"),
           "kt_limit_s": doc.get("kt_limit_s"), "spaces": {}}
    for name, space in doc.get("spaces", {}).items():
        s = {}
        if "ktune" in space:
            s["ktune"] = tool_rows(space["ktune"], within, "default")
        if "kernel_tuner" in space:
            kt = space["kernel_tuner"]
            s["kernel_tuner"] = tool_rows(kt, within, "?")
            s["kernel_tuner"]["start_s"] = kt.get("start_s")
            s["kernel_tuner"]["device"] = kt.get("device")
        kn = next((r for r in s.get("ktune", {}).get("rows", []) if r["seeds"]), None)
        kts = [r for r in s.get("kernel_tuner", {}).get("rows", []) if r["seeds"]]
        if kn and kts:
            best = min(kts, key=lambda r: (r["launch"]["median"], r["launch"]["lower_bound"]))
            s["best_kernel_tuner"] = best["name"]
            for k in ("launch", "call"):
                v, q = ratio((best[k]["median"], best[k]["lower_bound"]), (kn[k]["median"], kn[k]["lower_bound"]))
                s[f"ratio_{k}"] = {"value": v, "qualifier": q}
        out["spaces"][name] = s
    return out


def fmt_s(value, lower_bound=False):
    """Seconds: three decimals below one second, two above; ">=" before a lower bound."""
    if value is None:
        return "-"
    return (">=" if lower_bound else "") + (f"{value:.3f}" if value < 1 else f"{value:.2f}")


def lines(summary):
    """The table, one line per row, the result lines starting with '== '."""
    pct = 100 * summary["within"]
    out = [f"headline: time to within {pct:g}% of each space's brute-forced optimum, from just before "
           f"the process started (median over seeds, min-max); 'from call' leaves the process start out; "
           f"a run that did not reach it counts as the time it stopped (>=: a lower bound)",
           f"ktune's search: {summary.get('ktune_search')}; Kernel Tuner's runs at most {summary.get('kt_limit_s')} s each"]
    for name, s in summary["spaces"].items():
        for tool in ("ktune", "kernel_tuner"):
            if tool not in s:
                continue
            b = s[tool]["brute"]
            if b["status"] != "ok":
                out.append(f"== headline {name} {tool}: brute force failed {b.get('error', '')}".rstrip())
                continue
            extra = ""
            if tool == "kernel_tuner" and s[tool].get("start_s") is not None:
                extra = f", process start {s[tool]['start_s']:.2f} s (added to each run, with its strategy's imports)"
            out.append(f"{name} {tool}: brute force {b['configs']} configurations ({b['valid']} valid) in "
                       f"{b['wall_s']:.1f} s, optimum {b['optimum_ms']:.5f} ms, {b['within_target']} within "
                       f"{pct:g}%{extra}")
        out.append(f"{'space':7} {'tool':13} {'strategy':18} {'median s':>9} {'min-max s':>14} "
                   f"{'from call':>9} {'evals':>7} {'reached':>8}")
        for tool in ("ktune", "kernel_tuner"):
            for r in s.get(tool, {}).get("rows", []):
                head = f"{name:7} {tool:13} {r['name']:18}"
                if r["could_not_run"] and not r["seeds"]:
                    out.append(f"{head} could not run: {r['could_not_run']}")
                    continue
                if not r["seeds"]:
                    why = "; ".join(r["failed"][:1]) or "skipped: out of time"
                    out.append(f"{head} no run: {why}")
                    continue
                L = r["launch"]
                span = f"{fmt_s(L['min'])}-{fmt_s(L['max'], L['max_lower_bound'])}"
                ev = r["evals"]
                evs = "-" if ev["median"] is None else (">=" if ev["lower_bound"] else "") + f"{ev['median']:g}"
                note = ""
                if r["skipped"] or r["failed"]:
                    note = f"  ({r['skipped']} skipped, {len(r['failed'])} failed)"
                out.append(f"{head} {fmt_s(L['median'], L['lower_bound']):>9} {span:>14} "
                           f"{fmt_s(r['call']['median'], r['call']['lower_bound']):>9} {evs:>7} "
                           f"{r['reached']:>3} of {r['seeds']:<2}{note}")
        if "best_kernel_tuner" in s:
            rl, rc = s["ratio_launch"], s["ratio_call"]

            def show(x):
                return "n/a" if x["value"] is None else ("" if x["qualifier"] == "=" else x["qualifier"]) + f"{x['value']:.1f}x"
            verdict = "unknown"
            if rl["value"] is not None:
                if rl["qualifier"] in ("=", ">=") and rl["value"] >= 20:
                    verdict = "met"
                elif rl["qualifier"] in ("=", "<=") and rl["value"] < 20:
                    verdict = "not met"
            cannot = [r["name"] for r in s.get("kernel_tuner", {}).get("rows", []) if r["could_not_run"] and not r["seeds"]]
            out.append(f"== headline {name}: Kernel Tuner's best ({s['best_kernel_tuner']}) / ktune = "
                       f"{show(rl)} from process start, {show(rc)} from call; target >= 20x: {verdict}"
                       + (f"; could not run: {', '.join(cannot)}" if cannot else ""))
        else:
            out.append(f"== headline {name}: no ratio (a side has no run)")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", help="headline.py's runs.json")
    ap.add_argument("--json", help="write the summary there as JSON")
    a = ap.parse_args(argv)
    with open(a.runs) as f:
        summary = summarize(json.load(f))
    print("\n".join(lines(summary)))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(summary, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
