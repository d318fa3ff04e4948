#!/usr/bin/env python3
"""Tests of bench/headline on small made-up inputs, no GPU: the judging of runs against a brute
force (summarize.py), the medians and ratios with runs that stopped short, the table, and the
reading of a ktune database (headline.py). Plain python3, no packages:

    python3 bench/headline/test_headline.py

With KT_PEER set to a Kernel Tuner folder (site/, reduce.cu) and numpy installed, it also runs
kt_search.py in Kernel Tuner's simulation mode on a made-up cache of the kt270 space.
"""
import itertools
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import headline  # noqa: E402
import summarize  # noqa: E402

def load(path):
    with open(path) as f:
        return json.load(f)


def dump(doc, path):
    with open(path, "w") as f:
        json.dump(doc, f)


TABLE = {"a": 1.00, "b": 1.015, "c": 1.10, "d": 2.0, "e": None}


def run(evals, status="done", end=None, **kw):
    r = {"status": status, "evals": evals, "end_s": end if end is not None else (evals[-1][0] if evals else 0)}
    r.update(kw)
    return r


class Reaching(unittest.TestCase):
    def test_first_evaluation_within_target_by_brute_force_time(self):
        # c's own time in the run (0.5) is fast, but its brute-force time is 10% off: not a hit.
        evals = [[0.1, "d", 2.0], [0.2, "c", 0.5], [0.3, "b", 1.3], [0.4, "a", 1.0]]
        self.assertEqual(summarize.reaching(evals, TABLE, 1.0, 0.02), (3, 0.3))

    def test_failed_and_unknown_configurations_never_reach(self):
        self.assertIsNone(summarize.reaching([[0.1, "e", None], [0.2, "zz", 1.0]], TABLE, 1.0, 0.02))

    def test_bound_is_inclusive(self):
        self.assertEqual(summarize.reaching([[0.5, "x", None]], {"x": 1.02}, 1.0, 0.02), (1, 0.5))


class Judge(unittest.TestCase):
    def test_reached_adds_the_start(self):
        j = summarize.judge(run([[0.1, "d", 2], [0.25, "a", 1]]), TABLE, 1.0, 0.02, 2.0)
        self.assertEqual(j["status"], "reached")
        self.assertEqual(j["evals"], (2, False))
        self.assertEqual(j["call"], (0.25, False))
        self.assertAlmostEqual(j["launch"][0], 2.25)

    def test_not_reached_counts_as_its_stop(self):
        j = summarize.judge(run([[0.1, "d", 2]], end=15.0), TABLE, 1.0, 0.02, 3.0)
        self.assertEqual(j["status"], "not reached")
        self.assertEqual(j["call"], (15.0, True))
        self.assertEqual(j["launch"], (18.0, True))
        self.assertEqual(j["evals"], (1, True))

    def test_runs_that_did_not_run(self):
        for status in ("could not run", "skipped", "failed"):
            self.assertEqual(summarize.judge({"status": status, "error": "x"}, TABLE, 1.0, 0.02, 0)["status"], status)


class Median(unittest.TestCase):
    def test_exact(self):
        self.assertEqual(summarize.median([(3, False), (1, False), (2, False)]), (2, False))

    def test_stopped_short_above_the_median_leaves_it_exact(self):
        self.assertEqual(summarize.median([(1, False), (2, False), (3, False), (9, True), (9, True)]), (3, False))

    def test_stopped_short_below_the_median_makes_it_a_bound(self):
        self.assertEqual(summarize.median([(1, False), (2, True), (3, False), (4, False), (5, False)]), (3, True))

    def test_stopped_short_at_the_median(self):
        self.assertEqual(summarize.median([(1, False), (3, True), (5, False)]), (3, True))

    def test_even_count(self):
        self.assertEqual(summarize.median([(1, False), (2, False), (4, False), (9, True)]), (3, False))
        self.assertEqual(summarize.median([(1, False), (2, False), (4, True), (9, False)]), (3, True))

    def test_empty(self):
        self.assertEqual(summarize.median([]), (None, False))


class Ratio(unittest.TestCase):
    def test_qualifiers(self):
        self.assertEqual(summarize.ratio((10, False), (0.5, False)), (20.0, "="))
        self.assertEqual(summarize.ratio((10, True), (0.5, False)), (20.0, ">="))
        self.assertEqual(summarize.ratio((10, False), (0.5, True)), (20.0, "<="))
        self.assertEqual(summarize.ratio((10, True), (0.5, True)), (None, "n/a"))
        self.assertEqual(summarize.ratio((None, False), (0.5, False)), (None, "n/a"))


def made_up_doc():
    """Two tools on one space: ktune reaching at 0.3-0.5 s, Kernel Tuner's genetic algorithm at
    5.5-8 s (process start 4 s added), its random search stopping short twice, bayes_opt
    unable to run."""
    kn_runs = [dict(run([[0.05, "d", 2], [t, "b", 1.01]]), strategy="default", seed=i + 1, start_s=0.2)
               for i, t in enumerate([0.1, 0.2, 0.3, 0.25, 0.15])]
    ga = [dict(run([[1.0, "c", 1.1], [t, "a", 1.0]], status="reached"), strategy="genetic_algorithm", seed=i + 1)
          for i, t in enumerate([1.5, 2.0, 4.0, 3.0, 2.5])]
    rs = [dict(run([[1.0, "c", 1.1], [t, "b", 1.0]], status="reached"), strategy="random_sample", seed=i + 1)
          for i, t in enumerate([1.0, 1.2, 1.4])]
    rs += [dict(run([[1.0, "c", 1.1]], status="not reached", end=15.0), strategy="random_sample", seed=s)
           for s in (4, 5)]
    brute = {"status": "ok", "configs": 5, "valid": 4, "optimum_ms": 1.0, "table": TABLE, "wall_s": 12.0}
    return {"within": 0.02, "seeds": 5, "ktune_search": "--strategy auto --budget-evals 100", "kt_limit_s": 15,
            "spaces": {"kt270": {
                "ktune": {"brute": dict(brute, wall_s=1.0), "runs": kn_runs},
                "kernel_tuner": {"brute": brute, "start_s": 4.0, "device": "X",
                                 "runs": [{"strategy": "bayes_opt", "status": "could not run",
                                           "error": "ModuleNotFoundError: No module named 'sklearn'"}] + ga + rs}}}}


class Summary(unittest.TestCase):
    def test_rows_and_ratio(self):
        s = summarize.summarize(made_up_doc())["spaces"]["kt270"]
        kn = s["ktune"]["rows"][0]
        self.assertEqual((kn["seeds"], kn["reached"]), (5, 5))
        self.assertAlmostEqual(kn["launch"]["median"], 0.4)   # 0.2 start + 0.2
        self.assertAlmostEqual(kn["call"]["median"], 0.2)
        self.assertEqual(kn["evals"]["median"], 2)
        rows = {r["name"]: r for r in s["kernel_tuner"]["rows"]}
        self.assertEqual(rows["bayes_opt"]["seeds"], 0)
        self.assertIn("sklearn", rows["bayes_opt"]["could_not_run"])
        self.assertAlmostEqual(rows["genetic_algorithm"]["launch"]["median"], 6.5)
        self.assertEqual((rows["random_sample"]["seeds"], rows["random_sample"]["reached"]), (5, 3))
        # random: 5.0, 5.2, 5.4, >=19, >=19: the median 5.4 stands, the maximum is a bound.
        self.assertAlmostEqual(rows["random_sample"]["launch"]["median"], 5.4)
        self.assertFalse(rows["random_sample"]["launch"]["lower_bound"])
        self.assertTrue(rows["random_sample"]["launch"]["max_lower_bound"])
        self.assertEqual(s["best_kernel_tuner"], "random_sample")
        self.assertAlmostEqual(s["ratio_launch"]["value"], 5.4 / 0.4)
        self.assertEqual(s["ratio_launch"]["qualifier"], "=")
        self.assertAlmostEqual(s["ratio_call"]["value"], 1.4 / 0.2)
        self.assertEqual(s["ktune"]["brute"]["within_target"], 2)

    def test_table(self):
        text = "\n".join(summarize.lines(summarize.summarize(made_up_doc())))
        self.assertIn("could not run: ModuleNotFoundError", text)
        self.assertIn("== headline kt270: Kernel Tuner's best (random_sample) / ktune = 13.5x from process start, "
                      "7.0x from call; target >= 20x: not met; could not run: bayes_opt", text)
        self.assertIn("3 of 5", text)
        self.assertIn(">=19.00", text)

    def test_a_failed_brute_force_is_said(self):
        doc = made_up_doc()
        doc["spaces"]["kt270"]["kernel_tuner"]["brute"] = {"status": "failed", "error": "no GPU"}
        text = "\n".join(summarize.lines(summarize.summarize(doc)))
        self.assertIn("== headline kt270 kernel_tuner: brute force failed no GPU", text)
        self.assertIn("== headline kt270: no ratio", text)

    def test_main_writes_json(self):
        with tempfile.TemporaryDirectory() as d:
            runs = os.path.join(d, "runs.json")
            dump(made_up_doc(), runs)
            out = subprocess.run([sys.executable, os.path.join(HERE, "summarize.py"), runs, "--json",
                                  os.path.join(d, "s.json")], capture_output=True, text=True)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn("== headline kt270", out.stdout)
            self.assertEqual(load(os.path.join(d, "s.json"))["spaces"]["kt270"]["best_kernel_tuner"],
                             "random_sample")


class KtuneDatabase(unittest.TestCase):
    def test_utc(self):
        self.assertAlmostEqual(headline.utc_epoch("1970-01-01T00:00:01.250Z"), 1.25)
        self.assertAlmostEqual(headline.utc_epoch("1970-01-01T00:01:00Z"), 60.0)

    def test_read_db_leaves_retimings_out(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "k.db")
            con = sqlite3.connect(path)
            con.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY, started_at TEXT, strategy_chosen TEXT)")
            con.execute("CREATE TABLE trials (id INTEGER PRIMARY KEY, created_at TEXT, config_key TEXT, "
                        "status INTEGER, time_ms REAL, kind INTEGER)")
            con.execute("INSERT INTO runs VALUES (1, '2026-01-01T00:00:00.000Z', 'bayes')")
            con.executemany("INSERT INTO trials VALUES (?, ?, ?, ?, ?, ?)", [
                (1, "2026-01-01T00:00:00.100Z", "a", 0, 1.0, 0),
                (2, "2026-01-01T00:00:00.250Z", "b", 2, None, 0),
                (3, "2026-01-01T00:00:00.300Z", "a", 0, 1.0, 1)])
            con.commit()
            con.close()
            started, chosen, evals = headline.read_db(path)
            self.assertEqual(chosen, "bayes")
            self.assertEqual([(round(c - started, 3), k, t) for c, k, t in evals], [(0.1, "a", 1.0), (0.25, "b", None)])


@unittest.skipUnless(os.environ.get("KT_PEER"), "KT_PEER (a Kernel Tuner folder) not set")
class KernelTunerSimulated(unittest.TestCase):
    def test_kt_search_on_a_made_up_cache(self):
        import kt_search
        peer = os.environ["KT_PEER"]
        tp = kt_search.SPACES["kt270"]
        cache = {}
        for vals in itertools.product(*tp.values()):
            p = dict(zip(tp, vals))
            t = 1.0 + abs(p["block_size_x"] - 256) / 256 + abs(p["items"] - 8) / 8 + (2 - p["variant"]) * 0.01
            cache[",".join(map(str, vals))] = dict(p, time=t, times=[t] * 7, compile_time=50.0, verification_time=1.0,
                                                   benchmark_time=2.0, strategy_time=0, framework_time=0)
        with tempfile.TemporaryDirectory() as d:
            sim = os.path.join(d, "sim.json")
            dump({"device_name": "Sim", "kernel_name": "reduce_sum", "problem_size": kt_search.N,
                  "tune_params_keys": list(tp), "tune_params": tp, "objective": "time", "cache": cache}, sim)
            out = os.path.join(d, "kt.json")
            env = dict(os.environ, PYTHONPATH=os.path.join(peer, "site"))
            p = subprocess.run([sys.executable, os.path.join(HERE, "kt_search.py"), "--peer", peer, "--space", "kt270",
                                "--out", out, "--simulate", sim, "--seeds", "2", "--limit", "20",
                                "--strategies", "genetic_algorithm,random_sample,no_such_strategy"],
                               capture_output=True, text=True, env=env, timeout=300)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            doc = load(out)
            self.assertEqual(doc["brute"]["configs"], 270)
            self.assertEqual(doc["brute"]["optimum_ms"], 1.0)
            runs = [r for r in doc["runs"] if r["strategy"] == "genetic_algorithm"]
            self.assertEqual([r["seed"] for r in runs], [1, 2])
            for r in runs:
                self.assertEqual(r["status"], "reached")
                self.assertTrue(r["evals"][-1][1].startswith("256,8,2,"))
            bad = [r for r in doc["runs"] if r["strategy"] == "no_such_strategy"]
            self.assertEqual([r["status"] for r in bad], ["could not run"])
            self.assertIn("ModuleNotFoundError", bad[0]["error"])
            # Each run's start: the process's and its strategy's imports.
            self.assertAlmostEqual(runs[0]["start_s"], doc["start_s"] + doc["strategy_imports_s"]["genetic_algorithm"],
                                   places=3)
            # The same seed gives the same search.
            p2 = subprocess.run([sys.executable, os.path.join(HERE, "kt_search.py"), "--peer", peer, "--space", "kt270",
                                 "--out", out + "2", "--simulate", sim, "--seeds", "1", "--limit", "20",
                                 "--strategies", "genetic_algorithm"], capture_output=True, text=True, env=env, timeout=300)
            self.assertEqual(p2.returncode, 0, p2.stderr)
            again = load(out + "2")["runs"][0]
            self.assertEqual([e[1] for e in again["evals"]], [e[1] for e in runs[0]["evals"]])


if __name__ == "__main__":
    unittest.main()
