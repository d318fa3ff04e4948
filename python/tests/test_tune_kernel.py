"""tune_kernel on the replay backend (Kernel Tuner's simulation_mode over a cache file): no GPU.

Each test builds a Kernel Tuner cache of a small vector_add space, then tunes through ktune as a
Kernel Tuner script would, and checks what comes back, what the database holds and what the
cache file holds afterwards."""

import io
import json
import os
import tempfile
import unittest
from unittest import mock

import numpy

import ktune
from ktune import cache as kt_cache
from ktune import interface

KERNEL = """
__global__ void vector_add(float *c, float *a, float *b, int n) {
    int i = blockIdx.x * block_size_x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""
SIZES = [128, 256, 512, 1024]
# Recorded mean times (ms) per block_size_x; 512 is the fastest, 1024 failed to run.
TIMES = {128: 0.40, 256: 0.30, 512: 0.25}


# Recorded energies (J per run), where a cache has them: 128 the least, 512 the most.
ENERGIES = {128: 0.08, 256: 0.09, 512: 0.10}


def write_cache(path, device="NVIDIA H100 80GB HBM3", energies=False):
    cache = {}
    for bs in SIZES:
        t = TIMES.get(bs)
        entry = {"block_size_x": bs, "time": t if t else "RuntimeFailedConfig",
                 "times": [t] * 7 if t else [], "compile_time": 10.0}
        if t and energies:
            entry["nvml_energy"] = ENERGIES[bs]
            entry["nvml_power"] = ENERGIES[bs] / (t * 1e-3)
        cache[str(bs)] = entry
    with open(path, "w") as f:
        json.dump({"version": "1.0", "device_name": device, "kernel_name": "vector_add",
                   "problem_size": 10000, "tune_params_keys": ["block_size_x"],
                   "tune_params": {"block_size_x": SIZES}, "objective": "time",
                   "cache": cache}, f)


def arguments(n=10000):
    a = numpy.random.randn(n).astype(numpy.float32)
    b = numpy.random.randn(n).astype(numpy.float32)
    return [numpy.zeros_like(a), a, b, numpy.int32(n)]


class ReplayTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.cache = os.path.join(self.dir.name, "cache.json")
        self.db = os.path.join(self.dir.name, "results.db")
        write_cache(self.cache)

    def tearDown(self):
        self.dir.cleanup()

    def tune(self, **kw):
        args = dict(cache=self.cache, simulation_mode=True, db=self.db, quiet=True)
        args.update(kw)
        return ktune.tune_kernel("vector_add", KERNEL, 10000, arguments(),
                                 {"block_size_x": SIZES}, **args)

    def test_results_have_kernel_tuners_shape(self):
        results, env = self.tune()
        self.assertEqual(sorted(r["block_size_x"] for r in results), SIZES)
        for r in results:
            for key in ("time", "times", "compile_time", "benchmark_time", "timestamp"):
                self.assertIn(key, r)
        by_size = {r["block_size_x"]: r for r in results}
        self.assertAlmostEqual(by_size[256]["time"], 0.30)
        self.assertEqual(len(by_size[256]["times"]), 7)
        self.assertEqual(by_size[1024]["time"], "RuntimeFailedConfig")
        self.assertEqual(env["best_config"]["block_size_x"], 512)
        self.assertTrue(env["simulation"])
        self.assertEqual(env["device_name"], "NVIDIA H100 80GB HBM3")
        self.assertIn("ktune_version", env)

    def test_metrics_are_computed_per_result(self):
        metrics = {"GB/s": lambda p: 3 * 4 * 10000 / 1e9 / (p["time"] / 1e3)}
        results, _ = self.tune(metrics=metrics)
        by_size = {r["block_size_x"]: r for r in results}
        self.assertAlmostEqual(by_size[512]["GB/s"], 12e4 / 1e9 / 0.25e-3)
        self.assertEqual(by_size[1024]["GB/s"], "RuntimeFailedConfig")

    def test_a_metric_given_as_a_string_is_evaluated_as_kernel_tuner_does(self):
        metrics = {"GB/s": "(3 * 4 * 10000 / 1e9) / (time / 1e3)",
                   "per_thread": "time / block_size_x"}
        results, _ = self.tune(metrics=metrics)
        by_size = {r["block_size_x"]: r for r in results}
        self.assertAlmostEqual(by_size[512]["GB/s"], 12e4 / 1e9 / 0.25e-3)
        self.assertAlmostEqual(by_size[256]["per_thread"], 0.30 / 256)
        with self.assertRaisesRegex(ktune.KtuneError, "metric 'no_such_name / time': NameError"):
            self.tune(metrics={"x": "no_such_name / time"})

    def best_row(self):
        import sqlite3
        with sqlite3.connect(self.db) as db:
            return db.execute(
                "SELECT t.config_json, b.objective, b.objective_higher_is_better, t.objective "
                "FROM best b JOIN trials t ON t.id = b.trial_id "
                "ORDER BY b.updated_at DESC").fetchall()

    def test_an_objective_over_the_metrics_chooses_and_stores_the_best(self):
        # Ranked by time, 512 wins; by these metrics 256 does, higher and lower is better.
        cases = [
            ("score", True, lambda p: 1.0 if p["block_size_x"] == 512 else 1 / p["time"]),
            ("cost", False, lambda p: p["time"] / (2 if p["block_size_x"] == 256 else 1)),
        ]
        for name, higher, metric in cases:
            with self.subTest(objective=name):
                results, env = self.tune(metrics={name: metric}, objective=name,
                                         objective_higher_is_better=higher,
                                         db=os.path.join(self.dir.name, name + ".db"))
                self.assertEqual(env["best_config"]["block_size_x"], 256)
                self.db = os.path.join(self.dir.name, name + ".db")
                rows = self.best_row()
                self.assertEqual(len(rows), 1)
                config, stored_name, stored_higher, value = rows[0]
                self.assertEqual(json.loads(config)["block_size_x"], 256)
                self.assertEqual((stored_name, stored_higher), (name, int(higher)))
                self.assertAlmostEqual(value, metric({"block_size_x": 256, "time": 0.30}))
                by_size = {r["block_size_x"]: r for r in results}
                self.assertAlmostEqual(by_size[256][name], value)
                with open(self.cache) as f:
                    self.assertEqual(json.load(f)["objective"], name)

    def test_a_later_run_by_time_stores_the_best_by_time_again(self):
        self.tune(metrics={"cost": lambda p: -p["block_size_x"] + 2000}, objective="cost",
                  objective_higher_is_better=False)
        self.assertEqual(json.loads(self.best_row()[0][0])["block_size_x"], 512)
        self.tune(metrics={"cost": lambda p: p["block_size_x"]}, objective="cost",
                  objective_higher_is_better=False)
        self.assertEqual(json.loads(self.best_row()[0][0])["block_size_x"], 128)
        _, env = self.tune()
        config, name, higher, value = self.best_row()[0]
        self.assertEqual((json.loads(config)["block_size_x"], name, higher, value),
                         (512, "time", 0, None))

    def test_a_kernel_tuner_objective_name_knows_its_direction(self):
        # GFLOP/s is higher-is-better to Kernel Tuner: no objective_higher_is_better needed.
        _, env = self.tune(metrics={"GFLOP/s": lambda p: 1 / p["time"]}, objective="GFLOP/s")
        self.assertEqual(env["best_config"]["block_size_x"], 512)
        self.assertEqual(self.best_row()[0][1:3], ("GFLOP/s", 1))

    def test_a_configuration_whose_objective_is_not_a_number_is_never_the_best(self):
        metric = lambda p: None if p["block_size_x"] == 512 else 1 / p["time"]  # noqa: E731
        _, env = self.tune(metrics={"GB/s": metric}, objective="GB/s")
        self.assertEqual(env["best_config"]["block_size_x"], 256)
        self.assertEqual(json.loads(self.best_row()[0][0])["block_size_x"], 256)

    def test_an_objective_that_raises_ends_the_run_naming_it(self):
        def metric(p):
            if p["block_size_x"] == 256:
                raise ZeroDivisionError("no")
            return 1.0
        with self.assertRaisesRegex(Exception, "objective 'GB/s' raised ZeroDivisionError"):
            self.tune(metrics={"GB/s": metric}, objective="GB/s")

    def test_string_restrictions_remove_configurations(self):
        results, env = self.tune(restrictions=["block_size_x <= 256"])
        self.assertEqual(sorted(r["block_size_x"] for r in results), [128, 256])
        self.assertEqual(env["best_config"]["block_size_x"], 256)

    def test_function_restrictions_are_called_as_kernel_tuner_calls_them(self):
        cases = [
            # A lone function gets the dict of parameters.
            (lambda p: p["block_size_x"] >= 256, [256, 512, 1024]),
            # A function in a list gets the values in the parameters' order.
            ([lambda block_size_x: block_size_x != 512], [128, 256, 1024]),
            # (function, names) gets the named values; strings apply as well.
            ([(lambda b: b < 1024, ["block_size_x"]), "block_size_x >= 256"], [256, 512]),
            # A division by zero rejects the configuration.
            ([lambda block_size_x: 1 // (block_size_x - 128) >= 0], [256, 512, 1024]),
        ]
        for restrictions, expected in cases:
            with self.subTest(expected=expected):
                with self.assertWarnsRegex(UserWarning, "evaluated in Python for each of the 4"):
                    results, _ = self.tune(restrictions=restrictions)
                self.assertEqual(sorted(r["block_size_x"] for r in results), expected)

    def test_an_effort_level_runs_ktunes_auto_search(self):
        # The four configurations fit within the quick budget: each is measured, in random order.
        results, env = self.tune(effort="quick")
        self.assertEqual(sorted(r["block_size_x"] for r in results), SIZES)
        self.assertEqual(env["best_config"]["block_size_x"], 512)
        import sqlite3
        with sqlite3.connect(self.db) as db:
            self.assertEqual(db.execute("SELECT strategy, strategy_chosen FROM runs").fetchall(),
                             [("auto", "random")])
        os.remove(self.db)
        with self.assertRaisesRegex(ktune.KtuneError, "effort 'fast': expected quick, default, "
                                                      "thorough"):
            self.tune(effort="fast")
        self.assertFalse(os.path.exists(self.db))

    def test_function_restrictions_that_reject_everything_are_an_error(self):
        with self.assertWarns(UserWarning):
            with self.assertRaisesRegex(ktune.KtuneError, "no configuration satisfies"):
                self.tune(restrictions=lambda p: False)
        with self.assertRaisesRegex(ktune.KtuneError, "not tuned: tile"):
            self.tune(restrictions=[(lambda t: t > 1, ["tile"])])

    def test_a_cache_answers_its_configurations_outside_simulation_mode(self):
        # Brute force takes the cache's entries instead of measuring them again (Kernel Tuner
        # does the same); here all are cached, so no GPU is needed.
        with mock.patch.object(interface._ktune, "device_name", lambda ordinal=0:
                               "NVIDIA H100 80GB HBM3", create=True):
            results, env = self.tune(simulation_mode=False,
                                     metrics={"speed": lambda r: 1 / r["time"]})
            self.assertEqual(sorted(r["block_size_x"] for r in results), SIZES)
            self.assertEqual(env["best_config"]["block_size_x"], 512)
            self.assertAlmostEqual(env["best_config"]["speed"], 4.0)
            self.assertIn("nothing was measured", env["ktune_notes"][0])
        with mock.patch.object(interface._ktune, "device_name", lambda ordinal=0:
                               "NVIDIA A100-PCIE-40GB", create=True):
            with self.assertRaisesRegex(ktune.KtuneError, "cache of device 'NVIDIA H100 80GB "
                                        "HBM3', this is 'NVIDIA A100-PCIE-40GB'"):
                self.tune(simulation_mode=False)

    def test_every_kernel_tuner_strategy_name_runs_with_its_options(self):
        options = {"diff_evo": {"method": "rand1exp", "popsize": 2, "F": 0.5},
                   "pso": {"popsize": 3, "w": 0.4, "c1": 2.0, "constraint_aware": False},
                   "firefly_algorithm": {"popsize": 3, "B0": 0.5, "alpha": 0.1},
                   "minimize": {"method": "Nelder-Mead"},
                   "basinhopping": {"method": "L-BFGS-B", "T": 0.5},
                   "dual_annealing": {"method": "COBYLA"},
                   "ordered_greedy_mls": {"neighbor": "adjacent"}}
        for name in interface.STRATEGIES:
            if interface.STRATEGIES[name].startswith("optuna"):
                continue  # needs the Optuna module: the CLI's tests run it
            with self.subTest(strategy=name):
                results, env = self.tune(strategy=name,
                                         strategy_options=dict(options.get(name, {}),
                                                               max_fevals=3))
                self.assertEqual(len(results), 3)
                self.assertIn(env["best_config"]["block_size_x"], SIZES)

    def test_a_watched_run_draws_a_bar_from_its_progress(self):
        screen = Terminal()
        with mock.patch.object(interface, "progress_bar",
                               lambda quiet: interface.ProgressBar(screen)):
            self.tune()
        drawn = screen.getvalue()
        self.assertTrue(drawn.endswith("\n"), drawn)
        last = drawn.rstrip("\n").split("\r")[-1].rstrip()
        self.assertRegex(last, r"^\[#{30}\] (\d+)/\1, best 0\.25 ms")

    def test_results_become_a_pandas_data_frame_without_loss(self):
        try:
            import pandas
        except ImportError:
            self.skipTest("pandas is not installed (Debian: python3-pandas)")
        results, _ = self.tune()
        frame = pandas.DataFrame(results)
        self.assertEqual(len(frame), len(results))
        self.assertEqual(set(frame.columns), set().union(*results))
        # Every value as it was; a key a result lacks (ktune_error of a working one) and a None
        # (the time of a failure) are pandas' missing value.
        for row, result in zip(frame.to_dict("records"), results):
            for key, value in row.items():
                if result.get(key) is None:
                    self.assertTrue(pandas.isna(value), (key, value))
                else:
                    self.assertEqual(value, result[key], key)

    def test_a_register_observer_adds_num_regs(self):
        results, _ = self.tune(observers=[ktune.observers.RegisterObserver()])
        # A replayed cache holds no register counts: the key is there, its value unknown.
        self.assertTrue(all("num_regs" in r and r["num_regs"] is None for r in results))
        results, _ = self.tune()
        self.assertFalse(any("num_regs" in r for r in results))

    def test_an_nvml_observer_adds_the_clock_and_temperature_ktune_reads(self):
        observer = ktune.observers.NVMLObserver(["core_freq", "temperature"])
        results, _ = self.tune(observers=[observer])
        # A replayed cache holds no readings: the keys are there, their values unknown.
        for r in results:
            self.assertIsNone(r["core_freq"], r)
            self.assertIsNone(r["temperature"], r)
        for observable, text in [("power_readings", "'power_readings' is not supported"),
                                 ("gr_voltage", "'gr_voltage' is not supported"),
                                 ("volts", "unknown observable 'volts'")]:
            with self.subTest(observable=observable):
                with self.assertRaisesRegex(ktune.KtuneError, text):
                    self.tune(observers=[ktune.observers.NVMLObserver([observable])])

    def test_an_nvml_observer_adds_energy_and_power_and_energy_can_be_the_objective(self):
        write_cache(self.cache, energies=True)
        observer = ktune.observers.NVMLObserver(["nvml_energy", "nvml_power"])
        results, env = self.tune(observers=[observer])
        by_size = {r["block_size_x"]: r for r in results}
        self.assertAlmostEqual(by_size[256]["nvml_energy"], 0.09)
        self.assertAlmostEqual(by_size[256]["nvml_power"], 300.0)
        self.assertIsNone(by_size[1024]["nvml_energy"])
        self.assertEqual(env["best_config"]["block_size_x"], 512)  # by time
        results, env = self.tune(observers=[observer], objective="nvml_energy")
        self.assertEqual(env["best_config"]["block_size_x"], 128)
        # The stored best follows it, and the client chooses among the Pareto set by policy.
        client = ktune.Client(self.db, device="NVIDIA H100 80GB HBM3", arch="sm_90")
        self.assertIsNone(client.best("vector_add", 10000))  # replayed bests never answer
        with self.assertRaisesRegex(ktune.KtuneError, "policy"):
            client.best("vector_add", 10000, policy=5)
        # Kernel Tuner 1.4's objectives={...} of one entry is that objective; of two, refused.
        results, env = self.tune(observers=[observer], objectives={"nvml_energy": False})
        self.assertEqual(env["best_config"]["block_size_x"], 128)
        with self.assertRaisesRegex(ktune.KtuneError, "objectives with 2 entries"):
            self.tune(observers=[observer], objectives={"time": False, "nvml_energy": False})
        with self.assertRaisesRegex(ktune.KtuneError, "objectives should be a dict"):
            self.tune(objectives=["time"])
        # A metric over the energy is an objective as well: GFLOP/J, higher is better.
        metrics = {"GFLOP/J": lambda p: 10000 / 1e9 / p["nvml_energy"]}
        results, env = self.tune(observers=[observer], metrics=metrics, objective="GFLOP/J")
        self.assertEqual(env["best_config"]["block_size_x"], 128)

    def test_budget_from_strategy_options(self):
        results, _ = self.tune(strategy="random_sample", strategy_options={"max_fevals": 2})
        self.assertEqual(len(results), 2)

    def test_trials_go_to_the_database(self):
        results, env = self.tune()
        stored = ktune._ktune.trials(self.db, env["ktune_run_id"])
        self.assertEqual(len([t for t in stored if t["kind"] == 0]), len(SIZES))
        # A replayed best never answers the run-time client (docs/client.md); it says why.
        client = ktune.Client(self.db, device="NVIDIA H100 80GB HBM3", arch="sm_90")
        self.assertIsNone(client.best("vector_add", 10000))
        self.assertIsNone(client.best("no_such_kernel", 10000))
        self.assertIn("no_such_kernel", client.last_message)

    def test_cache_is_written_in_kernel_tuners_format(self):
        out = os.path.join(self.dir.name, "out.json")
        results, _ = self.tune()
        kt_cache.write(out, "vector_add", {"block_size_x": SIZES}, 10000,
                       {"device_name": "NVIDIA H100 80GB HBM3"}, results)
        written = kt_cache.read(out)
        self.assertEqual(written["tune_params_keys"], ["block_size_x"])
        self.assertEqual(sorted(written["cache"]), ["1024", "128", "256", "512"])
        self.assertAlmostEqual(written["cache"]["512"]["time"], 0.25)
        # What ktune wrote replays in turn.
        again, env = ktune.tune_kernel("vector_add", KERNEL, 10000, arguments(),
                                       {"block_size_x": SIZES}, cache=out,
                                       simulation_mode=True, db=self.db, quiet=True)
        self.assertEqual(env["best_config"]["block_size_x"], 512)

    def test_cache_of_another_kernel_is_refused(self):
        with self.assertRaisesRegex(ValueError, "cache of kernel 'vector_add'"):
            ktune.tune_kernel("other", KERNEL, 10000, arguments(), {"block_size_x": SIZES},
                              cache=self.cache, simulation_mode=True, db=self.db, quiet=True)


class Terminal(io.StringIO):
    def isatty(self):
        return True


class ProgressBarTest(unittest.TestCase):
    def test_only_where_someone_watches(self):
        self.assertIsInstance(interface.progress_bar(False, Terminal()), interface.ProgressBar)
        self.assertIsNone(interface.progress_bar(True, Terminal()))
        self.assertIsNone(interface.progress_bar(False, io.StringIO()))  # a file or a pipe

    def test_the_bar_is_redrawn_in_place_and_ended_by_a_newline(self):
        screen = Terminal()
        bar = interface.ProgressBar(screen)
        bar(0, 4, None, "")
        bar(4, 4, 0.5, "retiming")
        bar.close()
        frames = screen.getvalue().split("\r")[1:]
        self.assertEqual(frames[0], "[" + "." * 30 + "] 0/4")
        self.assertEqual(frames[1], "[" + "#" * 30 + "] 4/4, best 0.5 ms, retiming\n")
        bar = interface.ProgressBar(io.StringIO())
        bar.close()  # nothing drawn, nothing to end
        self.assertEqual(bar.stream.getvalue(), "")


class UnsupportedTest(unittest.TestCase):
    def call(self, **kw):
        ktune.tune_kernel("vector_add", KERNEL, 10000, arguments(), {"block_size_x": SIZES},
                          **kw)

    def test_each_unsupported_feature_is_named(self):
        cases = [
            (dict(lang="OpenCL"), "lang='OpenCL'"),
            (dict(lang="HIP"), "lang='HIP'"),
            (dict(observers=[object()]), "observers: object is not supported; ktune serves "
                                         "RegisterObserver and NVMLObserver"),
            (dict(observers=ktune.observers.RegisterObserver()), "a list of observers"),
            (dict(verify="numpy.allclose"), "verify must be a function"),
            (dict(restrictions=[42]), "neither a string nor a function"),
            (dict(strategy="hybrid_vndx"), "strategy 'hybrid_vndx' is not supported"),
            (dict(strategy="no_such_one"), "strategy 'no_such_one' is not supported; ktune has"),
            (dict(objective="GFLOP/s"), "objective 'GFLOP/s' is neither time nor one of the "
                                        "metrics"),
            (dict(objective="work", metrics={"work": len}), "objective 'work': give "
                                                            "objective_higher_is_better"),
            (dict(objective="time", objective_higher_is_better=True), "lower-is-better"),
            (dict(objective=["time"]), "expected the name of a metric"),
            (dict(objective="GB/s", objective_higher_is_better="yes",
                  metrics={"GB/s": len}), "expected True or False"),
            (dict(smem_args={"carveout": 1}), "only 'size'"),
            (dict(cmem_args={"not a name": numpy.zeros(4)}), "not the name of a __constant__"),
            (dict(simulation_mode=True), "simulation_mode needs a cache"),
            (dict(no_such_argument=1), "no_such_argument"),
        ]
        for kw, text in cases:
            with self.subTest(kw=list(kw)):
                with self.assertRaisesRegex(ktune.KtuneError, text):
                    self.call(**kw)

    def test_each_argument_out_of_its_range_is_named_with_the_range(self):
        nan = float("nan")
        cases = [
            (dict(iterations=2**40), r"iterations=1099511627776: expected an integer from 1 to"),
            (dict(iterations=0), r"iterations=0: expected an integer from 1"),
            (dict(seed=-1), r"seed=-1: expected an integer from 0 to 18446744073709551615"),
            (dict(device=-2), r"device=-2: expected an integer from 0"),
            (dict(strategy_options={"max_fevals": -5}), r"max_fevals'\]=-5: expected an integer"),
            (dict(strategy_options={"time_limit": 0}), r"time_limit'\]=0: expected a finite "
                                                       "number above 0"),
            (dict(atol=nan), r"atol=nan: expected a finite number at least 0"),
            (dict(compiler_options="-O3"), r"compiler_options='-O3': expected a list of strings, "
                                           r"such as \['-O3'\]"),
            (dict(grid_div_x=0), r"grid_div_x=0: expected an integer from 1"),
            (dict(grid_div_y=[2, 0]), r"grid_div_y=0: expected an integer from 1"),
        ]
        for kw, text in cases:
            with self.subTest(kw=kw):
                with self.assertRaisesRegex(ktune.KtuneError, text):
                    self.call(**kw)
        with self.assertRaisesRegex(ktune.KtuneError, r"problem_size=1180591620717411303424: "
                                                      "expected an integer from 0"):
            ktune.tune_kernel("vector_add", KERNEL, 2**70, arguments(), {"block_size_x": SIZES})
        with self.assertRaisesRegex(ktune.KtuneError, r"tune_params\['block_size_x'\]: value nan"):
            ktune.tune_kernel("vector_add", KERNEL, 10000, arguments(), {"block_size_x": [nan]})
        args = arguments()
        args[3] = numpy.float32(nan)
        with self.assertRaisesRegex(ktune.KtuneError, r"argument 3 is nan"):
            ktune.tune_kernel("vector_add", KERNEL, 10000, args, {"block_size_x": SIZES})

    def test_python_kernel_is_refused(self):
        with self.assertRaisesRegex(ktune.KtuneError, "python_kernel"):
            ktune.tune_kernel("f", lambda: None, 10, [], {"x": [1]})


class RunKernelTest(unittest.TestCase):
    """run_kernel is tune_kernel over the one configuration, every array fetched by a verify
    that keeps it (the engine itself is mocked here: it needs a GPU)."""

    def test_one_configuration_and_every_argument_back(self):
        args = arguments(8)
        after = [numpy.full(8, 3.0, numpy.float32), args[1], args[2], None]
        seen = {}

        def fake_tune(name, source, problem_size, arguments, tune_params, **kw):
            seen.update(kw, tune_params=tune_params)
            self.assertTrue(kw["verify"](None, after, atol=1e-6))
            return [{"block_size_x": 256, "ktune_status": "ok"}], {}

        with mock.patch.object(interface, "tune_kernel", fake_tune):
            got = ktune.run_kernel("vector_add", KERNEL, 8, args, {"block_size_x": 256},
                                   compiler_options=["-O3"])
        self.assertEqual(seen["tune_params"], {"block_size_x": [256]})
        self.assertEqual(seen["iterations"], 1)
        self.assertEqual(seen["compiler_options"], ["-O3"])
        self.assertTrue(seen["db"].endswith("run_kernel.db"), "a throwaway database")
        numpy.testing.assert_array_equal(got[0], after[0])
        self.assertIs(got[3], args[3], "a scalar comes back as given")

    def test_a_failed_run_is_an_error_naming_it(self):
        def failed(*a, **kw):
            return [{"block_size_x": 256, "ktune_status": "crashed",
                     "ktune_error": "cudaErrorIllegalAddress"}], {}

        with mock.patch.object(interface, "tune_kernel", failed):
            with self.assertRaisesRegex(ktune.KtuneError, "crashed: cudaErrorIllegalAddress"):
                ktune.run_kernel("vector_add", KERNEL, 8, arguments(8), {"block_size_x": 256})


class MappingTest(unittest.TestCase):
    """The manifest tune_kernel's arguments become."""

    def describe(self, problem_size=10000, grid_div=(None, None, None), answer=None,
                 tune_params=None, block_size_names=None, cmem_args=None, smem_args=None,
                 verify=None):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        args = arguments()
        tune_params = tune_params or {"block_size_x": SIZES}
        k = interface._kernel_description(
            "vector_add", KERNEL, problem_size, args, tune_params, grid_div, None, answer, 1e-3,
            block_size_names, ["-use_fast_math"], cmem_args, smem_args, self.dir.name, verify)
        return k, args

    def test_verify_fetches_the_answered_arguments_and_is_called_as_kernel_tuner_calls_it(self):
        # reduction.py's pattern: a scalar answer for an array output, checked by a function.
        n = 10000
        calls = []

        def verify(answer, gpu_result, atol=None):
            calls.append((answer, gpu_result, atol))
            return numpy.isclose(answer[0], numpy.sum(gpu_result[0]), atol=atol)

        answer = [numpy.float32(6.0), None, None, None]
        k, args = self.describe(answer=answer, verify=verify)
        out = k["buffers"][0]
        self.assertEqual(out["role"], "inout", "restored before every run, as Kernel Tuner does")
        self.assertNotIn("expected", out)
        self.assertTrue(k["unchecked"], "the engine compares nothing itself")
        self.assertEqual(list(k["fetched"]), ["arg0"])
        self.assertEqual([b["role"] for b in k["buffers"][1:]], ["input", "input"])
        check = interface._verify_check(verify, answer, args, k["fetched"], 1e-3)
        right = numpy.zeros(n, dtype=numpy.float32)
        right[:3] = 2.0
        self.assertIsNone(check({"arg0": right.tobytes()}))
        got_answer, gpu_result, atol = calls[-1]
        self.assertIs(got_answer, answer)
        self.assertEqual(atol, 1e-3)
        self.assertEqual([r is None for r in gpu_result], [False, True, True, True])
        numpy.testing.assert_array_equal(gpu_result[0], right)
        self.assertEqual(gpu_result[0].dtype, numpy.float32)
        wrong = right.copy()
        wrong[5] = 1.0
        self.assertIn("verify returned False", check({"arg0": wrong.tobytes()}))

    def test_functions_of_the_parameters_become_hidden_parameters_per_configuration(self):
        # problem_size, a grid divisor and the shared memory size as Kernel Tuner's functions
        # of the parameters' dict: each configuration carries its values, pinned by the list.
        with self.assertWarnsRegex(UserWarning, "grid_div_x, problem_size_x"):
            k, _ = self.describe(problem_size=lambda p: (p["block_size_x"] * 10, 3),
                                 grid_div=(lambda p: p["block_size_x"] * 2, None, None),
                                 smem_args={"size": lambda p: 4 * p["block_size_x"]})
        params = dict(k["params"])
        self.assertEqual(params["ktune_problem_size_x"], [1280, 2560, 5120, 10240])
        self.assertEqual(params["ktune_problem_size_y"], [3])
        self.assertEqual(params["ktune_problem_size_z"], [1])
        self.assertEqual(params["ktune_grid_div_x"], [256, 512, 1024, 2048])
        self.assertEqual(params["ktune_shared_mem"], [512, 1024, 2048, 4096])
        self.assertEqual(k["problem"], {})
        self.assertIn("ktune_problem_size_x", k["grid"][0])
        self.assertIn("ktune_grid_div_x", k["grid"][0])
        self.assertEqual(k["shared_mem"], "ktune_shared_mem")
        names, rows = k["listed"]
        self.assertEqual(len(rows), len(SIZES))
        for row in rows:
            c = dict(zip(names, row))
            bs = int(c["block_size_x"])
            self.assertEqual(int(c["ktune_problem_size_x"]), bs * 10)
            self.assertEqual(int(c["ktune_grid_div_x"]), bs * 2)
            self.assertEqual(int(c["ktune_shared_mem"]), bs * 4)
        with self.assertRaisesRegex(interface.KtuneError, "problem_size returned 2.5"):
            with self.assertWarns(UserWarning):
                self.describe(problem_size=lambda p: 2.5)

    def test_cached_configurations_are_left_out_of_the_space(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        k = interface._kernel_description(
            "vector_add", KERNEL, 10000, arguments(), {"block_size_x": SIZES},
            (None, None, None), None, None, 1e-6, None, [], None, None, self.dir.name, None,
            frozenset({"256", "1024"}))
        names, rows = k["listed"]
        self.assertEqual(names, ["block_size_x"])
        self.assertEqual(rows, [["128"], ["512"]])

    def test_verify_without_an_answer_fetches_every_array(self):
        k, _ = self.describe(verify=lambda answer, result, atol=None: True)
        self.assertEqual(list(k["fetched"]), ["arg0", "arg1", "arg2"])
        self.assertTrue(all(b["role"] == "inout" for b in k["buffers"]))

    def test_arrays_become_files_and_scalars_values(self):
        k, args = self.describe()
        self.assertEqual([b["name"] for b in k["buffers"]], ["arg0", "arg1", "arg2"])
        self.assertEqual(k["args"][3], {"value": "10000", "type": "int32"})
        data = numpy.fromfile(k["buffers"][1]["init"][5:-1], dtype=numpy.float32)
        numpy.testing.assert_array_equal(data, args[1])
        self.assertTrue(k["unchecked"])
        self.assertEqual(k["defines"], "kernel_tuner")
        self.assertEqual(k["compile_options"], ["-use_fast_math"])

    def test_answer_makes_a_checked_buffer(self):
        n = 10000
        answer = [numpy.ones(n, dtype=numpy.float32), None, None, None]
        k, _ = self.describe(answer=answer)
        out = k["buffers"][0]
        self.assertEqual(out["role"], "inout")
        self.assertEqual(out["abs_tol"], 1e-3)
        self.assertEqual(out["rel_tol"], interface.NUMPY_RTOL)
        numpy.testing.assert_array_equal(numpy.fromfile(out["expected"][5:-1], numpy.float32), answer[0])
        self.assertFalse(k["unchecked"])

    def test_cmem_args_become_constant_buffers(self):
        coeff = numpy.arange(8, dtype=numpy.float32)
        k, _ = self.describe(cmem_args={"coeff": coeff})
        c = k["buffers"][-1]
        self.assertEqual((c["name"], c["role"], c["type"], c["size"]),
                         ("coeff", "constant", "float32", 8))
        numpy.testing.assert_array_equal(numpy.fromfile(c["init"][5:-1], numpy.float32), coeff)
        self.assertNotIn({"buffer": "coeff"}, k["args"], "not a kernel argument")

    def test_smem_args_size_is_the_launchs_shared_memory(self):
        k, _ = self.describe(smem_args={"size": 1024})
        self.assertEqual(k["shared_mem"], "1024")
        k, _ = self.describe(smem_args={"size": "block_size_x * 4"})
        self.assertEqual(k["shared_mem"], "block_size_x * 4")
        path = interface.write_manifest(self.dir.name, k)
        import tomllib
        with open(path, "rb") as f:
            self.assertEqual(tomllib.load(f)["launch"]["shared_mem"], "block_size_x * 4")
        k, _ = self.describe()
        self.assertIsNone(k["shared_mem"])

    def test_grid_follows_kernel_tuners_rules(self):
        k, _ = self.describe()
        self.assertEqual(k["problem"], {"problem_size": 10000})
        self.assertEqual(k["grid"][0], "(problem_size + block_size_x - 1) // (block_size_x)")
        self.assertEqual(k["block"], ["block_size_x", "1", "1"])
        tp = {"block_size_x": [16], "block_size_y": [4], "tile_size_x": [2]}
        k, _ = self.describe(problem_size=(64, 32), tune_params=tp,
                             grid_div=(["block_size_x", "tile_size_x"], None, None))
        self.assertEqual(k["problem"], {"problem_size_x": 64, "problem_size_y": 32})
        self.assertIn("(block_size_x) * (tile_size_x)", k["grid"][0])
        self.assertIn("block_size_y", k["grid"][1])
        k, _ = self.describe(problem_size="block_size_x", grid_div=([], None, None))
        self.assertEqual(k["problem"], {})
        self.assertEqual(k["grid"][0], "((block_size_x) + 1 - 1) // (1)")

    def test_block_size_names(self):
        k, _ = self.describe(tune_params={"bx": [32]}, block_size_names=["bx"])
        self.assertEqual(k["block_names"], ["bx", "block_size_y", "block_size_z"])
        self.assertEqual(k["block"], ["bx", "1", "1"])
        k, _ = self.describe(tune_params={"other": [1]})
        self.assertEqual(k["block"], ["256", "1", "1"])

    def test_defines_are_rendered_alone_as_kernel_tuner_renders_them(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        defines = {"BLOCK": "block_size_x", "HALF": lambda p: p["block_size_x"] // 2,
                   "VERSION": 3, "TYPE": "float"}
        k = interface._kernel_description(
            "vector_add", KERNEL.replace("block_size_x", "BLOCK"), 10000, arguments(),
            {"block_size_x": SIZES}, (None, None, None), None, None, 1e-3, None, [], None, None,
            self.dir.name, None, frozenset(), defines)
        path = interface.write_manifest(self.dir.name, k)
        # The function of the parameters is a hidden parameter, one value per configuration.
        names, rows = k["listed"]
        self.assertEqual(names, ["block_size_x", "ktune_define_HALF"])
        self.assertEqual(rows[1], ["256", '"128"'])
        import subprocess
        out = subprocess.run(
            [interface.ktune_executable(), "compile", "vector_add", "--plugin", path, "--set",
             "block_size_x=256,ktune_define_HALF=128", "--arch", "sm_90", "--source"],
            capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = [line for line in out.stdout.splitlines() if line.startswith("#define")]
        self.assertEqual(lines, ["#define BLOCK 256", "#define HALF 128", "#define VERSION 3",
                                 "#define TYPE float"])
        for bad, text in [({"not an identifier": 1}, "not a valid identifier"),
                          (["BLOCK"], "defines must be a dict")]:
            with self.assertRaisesRegex(ktune.KtuneError, text):
                interface._user_defines(bad, {})

    def test_manifest_is_written(self):
        k, _ = self.describe()
        path = interface.write_manifest(self.dir.name, k)
        with open(path) as f:
            text = f.read()
        import tomllib
        with open(path, "rb") as f:
            manifest = tomllib.load(f)
        self.assertEqual(manifest["launch"]["grid"], k["grid"])
        self.assertEqual(manifest["arg"][3], {"value": "10000", "type": "int32"})
        self.assertIn('defines = "kernel_tuner"', text)
        self.assertIn("[reference]\nunchecked = true", text)


if __name__ == "__main__":
    unittest.main()
