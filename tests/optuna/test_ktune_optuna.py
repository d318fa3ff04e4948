"""ktune_optuna.py's CachedTPESampler against Optuna's TPESampler, in the Python the Optuna module
embeds: the same proposals for the same seed and history (every TPE option ktune passes on,
categorical and integer parameters, failed, pruned and partial trials, batches of asks without a
tell between them, enqueued trials), and one fit per parameter per set of finished trials; its
SortedNSGAIISampler against NSGAIISampler (the same proposals, the same ranks); and the journal
storage's batched appends (what another process sees, and when).

Run by CTest (ktune_optuna_py); skipped (exit code 77) where Optuna is missing.
"""

import importlib.util
import math
import os
import random
import sys
import unittest

try:
    import optuna
    from optuna.distributions import CategoricalDistribution, IntDistribution
    from optuna.trial import TrialState
except ImportError as e:
    print(f"skipped: no Optuna in {sys.executable}: {e}")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
MODULE = os.path.join(HERE, "..", "..", "tuner", "strategies", "optuna", "ktune_optuna.py")
spec = importlib.util.spec_from_file_location("ktune_optuna", MODULE)
ktune_optuna = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ktune_optuna)
ktune_optuna.quiet()

# A kernel-like space of value indices, as ktune's strategy declares it.
SPACE = {
    "block_x": IntDistribution(0, 7),
    "block_y": IntDistribution(0, 7),
    "tile": IntDistribution(0, 3),
    "unroll": IntDistribution(0, 4),  # five values: the prior's mean is one of them
    "vector": IntDistribution(0, 1),
    "layout": CategoricalDistribution((0, 1, 2)),
}


def objective(params):
    t = 1.0
    for i, (name, d) in enumerate(SPACE.items()):
        high = len(d.choices) - 1 if isinstance(d, CategoricalDistribution) else d.high
        x = params[name] / max(1, high)
        t += (x - (0.3 if i % 2 else 0.6)) ** 2
    return t


def lockstep(test, options, trials=60, space=SPACE, value=objective, direction="minimize", seed=3,
             extra=None):
    """Runs TPESampler and CachedTPESampler on twin studies told the same, ktune's way: batches of
    asks, duplicates told at once and followed by an enqueued neighbour, some trials failed.
    Fails at the first proposal that differs; returns the cached sampler."""
    samplers = [optuna.samplers.TPESampler(seed=seed, **options),
                ktune_optuna.CachedTPESampler(seed=seed, **options)]
    studies = [optuna.create_study(sampler=s, direction=direction) for s in samplers]
    if extra:
        for study in studies:
            extra(study)
    rnd = random.Random(seed)
    known, pending, told = {}, [], 0

    def ask(fixed=None):
        asked = []
        for study in studies:
            if fixed is not None:
                study.enqueue_trial(fixed)
            asked.append(study.ask(space))
        params = [t.params for t in asked]
        test.assertEqual(params[0], params[1], f"trial {asked[0].number}, options {options}")
        return asked, tuple(sorted(params[0].items()))

    def tell(asked, value):
        for study, trial in zip(studies, asked):
            if value is None:
                study.tell(trial, state=TrialState.FAIL)
            else:
                study.tell(trial, value)

    while told < trials:
        while len(pending) < 4:
            asked, key = ask()
            if key in known:  # a duplicate: told at once, then a neighbour instead
                tell(asked, known[key])
                fixed = dict(key)
                name = rnd.choice(list(space))
                d = space[name]
                if isinstance(d, CategoricalDistribution):
                    fixed[name] = rnd.choice(d.choices)
                else:
                    fixed[name] = rnd.randrange(d.low, d.high + 1, d.step)
                asked, key = ask(fixed)
            known.setdefault(key, None if rnd.random() < 0.05 else value(dict(key)))
            pending.append((asked, known[key]))
        tell(*pending.pop(0))
        told += 1
    return samplers[1]


class SameProposals(unittest.TestCase):
    def test_defaults(self):
        lockstep(self, {})

    def test_without_the_prior(self):
        lockstep(self, {"consider_prior": False})

    def test_other_prior_weight_and_endpoints(self):
        lockstep(self, {"prior_weight": 2.5, "consider_endpoints": True})

    def test_without_magic_clip(self):
        lockstep(self, {"consider_magic_clip": False, "n_ei_candidates": 7})

    def test_few_startup_trials_and_maximize(self):
        lockstep(self, {"n_startup_trials": 2}, direction="maximize")

    def test_one_categorical_and_a_step(self):
        space = {"a": CategoricalDistribution(("x", "y", "z", "w")),
                 "b": IntDistribution(0, 12, step=3)}

        def value(params):
            return 1.0 + "xyzw".index(params["a"]) + (params["b"] - 6) ** 2

        lockstep(self, {}, trials=40, space=space, value=value)

    def test_scores_that_tie_up_to_rounding(self):
        # Two-valued parameters whose l and g are the same: TPESampler's choice between the
        # values is decided by the last bit of its sums (seed 4 meets one at trial 11).
        space = {"a": IntDistribution(0, 4), "b": IntDistribution(0, 1), "c": IntDistribution(0, 1),
                 "d": IntDistribution(0, 1)}
        table = [[[[1 + ((a * 7 + b * 5 + c * 3 + d * 11) % 13) / 13 for d in range(2)]
                   for c in range(2)] for b in range(2)] for a in range(5)]

        def value(params):
            return table[params["a"]][params["b"]][params["c"]][params["d"]]

        for seed in (4, 5):
            lockstep(self, {}, trials=40, space=space, value=value, seed=seed)

    def test_pruned_and_partial_trials(self):
        def extra(study):
            d = dict(SPACE)
            for i in range(6):  # partial trials: every other parameter
                params = {name: i % 2 for name in list(d)[i % 2::2]}
                study.add_trial(optuna.trial.create_trial(
                    params=params, distributions={n: d[n] for n in params}, value=2.0 + i))
            for i in range(4):
                params = {name: i % 2 for name in d}
                study.add_trial(optuna.trial.create_trial(
                    params=params, distributions=d, state=TrialState.PRUNED,
                    intermediate_values={1: 3.0 + i, 2: math.nan if i == 3 else 2.5 + i}))
            study.add_trial(optuna.trial.create_trial(
                params={n: 0 for n in d}, distributions=d, state=TrialState.PRUNED))

        lockstep(self, {"n_startup_trials": 4}, trials=40, extra=extra)


class FitsOncePerHistory(unittest.TestCase):
    def test_batch_asks_share_one_fit(self):
        sampler = ktune_optuna.CachedTPESampler(seed=1, n_startup_trials=5)
        study = optuna.create_study(sampler=sampler)
        for i in range(12):
            trial = study.ask(SPACE)
            study.tell(trial, objective(trial.params))
        # Fitted at the asks after the start-up trials finished: one fit per parameter each.
        self.assertEqual(sampler.fit_count, len(SPACE) * (12 - 5))
        before = sampler.fit_count
        batch = [study.ask(SPACE) for _ in range(8)]  # no tell in between: one fit for all
        self.assertEqual(sampler.fit_count - before, len(SPACE))
        study.enqueue_trial({name: 0 for name in SPACE})
        fixed = study.ask(SPACE)  # an enqueued trial samples nothing
        self.assertEqual(sampler.fit_count - before, len(SPACE))
        study.tell(batch[0], state=TrialState.FAIL)  # a failure is no observation
        study.ask(SPACE)
        self.assertEqual(sampler.fit_count - before, len(SPACE))
        study.tell(batch[1], objective(batch[1].params))
        study.tell(fixed, objective(fixed.params))
        study.ask(SPACE)
        study.ask(SPACE)
        self.assertEqual(sampler.fit_count - before, 2 * len(SPACE))

    def test_ktune_builds_the_cached_sampler_unless_told_not_to(self):
        make = ktune_optuna.make_sampler
        self.assertIsInstance(make("tpe", 1, []), ktune_optuna.CachedTPESampler)
        plain = make("tpe", 1, [("cached", "false")])
        self.assertIs(type(plain), optuna.samplers.TPESampler)
        with self.assertRaises(ktune_optuna.UsageError):
            make("tpe", 1, [("cached", "sometimes")])


class SortedNsga(unittest.TestCase):
    """SortedNSGAIISampler ranks a single objective by sorting and proposes what NSGAIISampler
    does: twin studies told the same, asked ahead (so the generation in progress has running
    trials and the ranking's cache misses), with many tied values, in both directions."""

    def twins(self, direction, options, trials=400, ahead=8, seed=5, coarse=True):
        samplers = [optuna.samplers.NSGAIISampler(seed=seed, **options),
                    ktune_optuna.SortedNSGAIISampler(seed=seed, **options)]
        studies = [optuna.create_study(sampler=x, direction=direction) for x in samplers]
        pending = [[], []]
        for n in range(trials):
            for i, study in enumerate(studies):
                while len(pending[i]) < ahead:
                    pending[i].append(study.ask(SPACE))
            a, b = pending[0].pop(0), pending[1].pop(0)
            self.assertEqual(a.params, b.params, f"trial {n}")
            value = objective(a.params)
            if coarse:
                value = round(value, 1)  # ties within and across ranks
            if n % 17 == 5:
                for study, t in zip(studies, (a, b)):
                    study.tell(t, state=TrialState.FAIL)
            else:
                for study, t in zip(studies, (a, b)):
                    study.tell(t, value)
        return studies

    def test_the_same_proposals_minimising_with_ties(self):
        self.twins("minimize", {"population_size": 10})

    def test_the_same_proposals_maximising(self):
        self.twins("maximize", {"population_size": 12, "crossover": ktune_optuna._crossover("uniform")},
                   coarse=False)

    def test_the_same_proposals_with_the_default_population(self):
        self.twins("minimize", {}, trials=300)

    def test_the_ranks_are_optunas_as_far_as_they_fill_the_population(self):
        rnd = random.Random(2)
        sampler = ktune_optuna.SortedNSGAIISampler(seed=1, population_size=20)
        plain = optuna.samplers.NSGAIISampler(seed=1, population_size=20)
        for direction in (optuna.study.StudyDirection.MINIMIZE,
                          optuna.study.StudyDirection.MAXIMIZE):
            for _ in range(20):
                population = [optuna.trial.create_trial(value=float(rnd.randint(0, 9)),
                                                        params={}, distributions={})
                              for _ in range(rnd.randint(1, 60))]
                for number, t in enumerate(population):
                    t.number = number
                ours = sampler._fast_non_dominated_sort(list(population), [direction])
                theirs = plain._fast_non_dominated_sort(list(population), [direction])
                self.assertEqual([[t.number for t in r] for r in ours],
                                 [[t.number for t in r] for r in theirs[:len(ours)]])
                self.assertGreaterEqual(sum(map(len, ours)), min(20, len(population)))

    def test_several_objectives_or_a_nan_take_optunas_ranking(self):
        sampler = ktune_optuna.SortedNSGAIISampler(seed=1)
        population = [optuna.trial.create_trial(values=[1.0, float(i % 3)], params={},
                                                distributions={}) for i in range(6)]
        for number, t in enumerate(population):
            t.number = number
        directions = [optuna.study.StudyDirection.MINIMIZE] * 2
        ranks = sampler._fast_non_dominated_sort(list(population), directions)
        self.assertEqual([sorted(t.number for t in r) for r in ranks], [[0, 3], [1, 4], [2, 5]])
        nan = [optuna.trial.create_trial(value=v, params={}, distributions={})
               for v in (1.0, float("nan"), 0.5)]
        for number, t in enumerate(nan):
            t.number = number
        ranks = sampler._fast_non_dominated_sort(list(nan), directions[:1])
        self.assertEqual(sum(map(len, ranks)), 3)  # every trial ranked, as Optuna does

    def test_ktune_builds_the_sorted_sampler_unless_told_not_to(self):
        make = ktune_optuna.make_sampler
        self.assertIsInstance(make("nsgaii", 1, []), ktune_optuna.SortedNSGAIISampler)
        self.assertIs(type(make("nsgaii", 1, [("sorted", "false")])),
                      optuna.samplers.NSGAIISampler)


class PrivateStudy(unittest.TestCase):
    """A study in memory makes its trials of fixed parameters and tells without Optuna's copies;
    the samplers see what they see through Optuna's enqueue_trial, ask and tell (a journal)."""

    def drive(self, study, trials=40):
        params = [(name, 1 + d.high if isinstance(d, IntDistribution) else len(d.choices),
                   isinstance(d, CategoricalDistribution)) for name, d in SPACE.items()]
        names = [p[0] for p in params]
        known, proposed, rnd = {}, [], random.Random(5)
        while len(proposed) < trials:
            number, config = study.ask(None)
            key = tuple(config)
            if key in known:  # told at once, then a fixed neighbour, as strategy.cpp does
                study.tell(number, int(TrialState.COMPLETE), known[key], None, None)
                i = rnd.randrange(len(params))
                config[i] = (config[i] + 1) % params[i][1]
                number, config = study.ask(config)
                key = tuple(config)
            value = known.setdefault(key, objective(dict(zip(names, config))))
            if len(proposed) % 9 == 4:
                study.tell(number, int(TrialState.FAIL), math.nan, None, "compile_failed")
            else:
                study.tell(number, int(TrialState.COMPLETE), value, ",".join(map(str, key)), None)
            proposed.append(key)
        return proposed, study.trials(0)

    def test_same_trials_as_through_a_journal(self):
        import tempfile

        params = [(name, 1 + d.high if isinstance(d, IntDistribution) else len(d.choices),
                   isinstance(d, CategoricalDistribution)) for name, d in SPACE.items()]
        for sampler in ("tpe", "cmaes", "random"):
            with self.subTest(sampler=sampler), tempfile.TemporaryDirectory() as tmp:
                private = ktune_optuna.Study(sampler, 9, params, [("n_startup_trials", "5")]
                                             if sampler == "tpe" else [], "", "")
                self.assertTrue(private.private)
                journal = ktune_optuna.Study(sampler, 9, params, [("n_startup_trials", "5")]
                                             if sampler == "tpe" else [],
                                             f"journal:{tmp}/study.log", "s")
                self.assertFalse(journal.private)
                a, trials_a = self.drive(private)
                b, trials_b = self.drive(journal)
                self.assertEqual(a, b)
                self.assertEqual([t[:5] for t in trials_a], [t[:5] for t in trials_b])
                self.assertEqual([t[5:] for t in trials_a], [t[5:] for t in trials_b])


class BatchedJournal(unittest.TestCase):
    """A journal study writes a trial's parameters and attributes in one append with its next
    operation, and never later than the release of the study's lock: another process reading the
    journal then sees the running trial whole."""

    PARAMS = [(name, 1 + d.high if isinstance(d, IntDistribution) else len(d.choices),
               isinstance(d, CategoricalDistribution)) for name, d in SPACE.items()]

    def test_another_reader_sees_a_drawn_trial_once_the_lock_is_released(self):
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            url = f"journal:{tmp}/study.log"
            study = ktune_optuna.Study("random", 4, self.PARAMS, [], url, "s")
            appends = []
            backend = study.study._storage._backend
            append = backend.append_logs
            backend.append_logs = lambda logs: (appends.append(len(logs)), append(logs))[1]
            study.lock()
            number, config = study.ask(None)
            study.claim(number, "a,b")
            study.unlock()
            reader = optuna.load_study(study_name="s", storage=ktune_optuna.make_storage(url))
            running = [t for t in reader.get_trials() if t.number == number]
            self.assertEqual(len(running), 1)
            self.assertEqual(running[0].state, TrialState.RUNNING)
            self.assertEqual([running[0].params[name] for name, _, _ in self.PARAMS], config)
            self.assertEqual(running[0].user_attrs["ktune_config"], "a,b")
            self.assertIn("ktune_worker", running[0].user_attrs)
            # the trial's creation, then its six parameters and two attributes in one append
            self.assertEqual(appends, [1, 8])
            study.tell(number, int(TrialState.COMPLETE), 2.5, "a,b", None)
            reader = optuna.load_study(study_name="s", storage=ktune_optuna.make_storage(url))
            done = [t for t in reader.get_trials() if t.number == number][0]
            self.assertEqual(done.state, TrialState.COMPLETE)
            self.assertEqual(done.value, 2.5)
            self.assertEqual(len(appends), 4)  # the tell: its attribute, then its state

    def test_trials_of_a_batched_journal_are_those_of_a_study_in_memory(self):
        import tempfile

        for sampler in ("tpe", "random"):
            with self.subTest(sampler=sampler), tempfile.TemporaryDirectory() as tmp:
                options = [("n_startup_trials", "5")] if sampler == "tpe" else []
                a = ktune_optuna.Study(sampler, 9, self.PARAMS, options, "", "")
                b = ktune_optuna.Study(sampler, 9, self.PARAMS, options,
                                       f"journal:{tmp}/study.log", "s")
                for study in (a, b):
                    for _ in range(30):
                        study.lock()
                        number, config = study.ask(None)
                        study.unlock()
                        value = objective(dict(zip([p[0] for p in self.PARAMS], config)))
                        study.tell(number, int(TrialState.COMPLETE), value, None, None)
                self.assertEqual([t[:5] for t in a.trials(0)], [t[:5] for t in b.trials(0)])


class StorageCheck(unittest.TestCase):
    """check_storage on generated URLs (a property test of --study-storage): it accepts a URL or
    raises UsageError naming it, never another exception, and writes nothing. Servers are only
    ever 127.0.0.1 port 1, where nothing listens."""

    def test_any_url_is_accepted_or_refused_by_name(self):
        import tempfile

        rng = random.Random(53)
        with tempfile.TemporaryDirectory() as tmp:
            os.mkdir(os.path.join(tmp, "folder"))
            with open(os.path.join(tmp, "file"), "w") as f:
                f.write("not a study\n")
            paths = [tmp, os.path.join(tmp, "folder"), os.path.join(tmp, "file"),
                     os.path.join(tmp, "new.log"), os.path.join(tmp, "missing", "x"), "", "/",
                     "/dev/null", "rel/ative", "a\0b", "%3f?#", "x" * 5000, "\udcff"]
            schemes = ["journal:", "sqlite:///", "sqlite://", "sqlite:", "redis://", "rediss://",
                       "unix://", "postgresql://", "mysql://", "nosuch://", "://", "", "file:",
                       "postgresql+nosuchdriver://"]
            servers = ["127.0.0.1:1", "127.0.0.1:1/0", "ktune@127.0.0.1:1/study", ":1", "[::",
                       "127.0.0.1:99999", ""]
            before = sorted(os.listdir(tmp))
            # KTUNE_STORAGE_CASES: more cases for a long run (the closing figures: 10^6).
            for _ in range(int(os.environ.get("KTUNE_STORAGE_CASES", "3000"))):
                scheme = rng.choice(schemes)
                rest = rng.choice(servers if scheme.endswith("//") and "sqlite" not in scheme
                                  else paths)
                url = scheme + rest
                if rng.random() < 0.2:
                    cut = rng.randrange(len(url) + 1)
                    url = url[:cut] + rng.choice(["?", "#", "%", ":", "/", "@", " "]) + url[cut:]
                try:
                    ktune_optuna.check_storage(url)
                except ktune_optuna.UsageError as e:
                    self.assertIn("study_storage '", str(e), url)
                except Exception as e:  # noqa: BLE001 (the property: nothing else escapes)
                    self.fail(f"{url!r}: {type(e).__name__}: {e}")
                self.assertEqual(sorted(os.listdir(tmp)), before, url)

    def test_what_cannot_hold_a_study_is_refused(self):
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            for url, says in [
                ("journal:" + os.path.join(tmp, "missing", "s.log"), "does not exist"),
                ("journal:" + tmp, "is a directory"),
                ("sqlite:///" + os.path.join(tmp, "missing", "s.db"), "does not exist"),
                ("nosuch://host/db", "not a storage Optuna knows"),
                ("sqlite:///:memory:", "is a file"),
                ("journal:a\0b", "study_storage"),
            ]:
                with self.subTest(url=url):
                    with self.assertRaisesRegex(ktune_optuna.UsageError, says):
                        ktune_optuna.check_storage(url)
            ktune_optuna.check_storage("journal:" + os.path.join(tmp, "ok.log"))
            ktune_optuna.check_storage("sqlite:///" + os.path.join(tmp, "ok.db"))
            self.assertEqual(os.listdir(tmp), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
