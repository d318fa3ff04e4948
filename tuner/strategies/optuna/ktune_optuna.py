"""ktune's side of an Optuna study, run inside the interpreter that libktune_optuna.so embeds.

The module text is compiled into the library (ktune_embed_text) and executed as the module
``ktune_optuna``. It builds a sampler from ktune's text options, creates or loads the study and
asks and tells by trial number. Parameters are indices into ktune's value lists, so the study
never sees a value it cannot store; validity is decided by ktune before anything is told.
"""

import datetime
import hashlib
import math
import os
import socket
import sys
import warnings

try:
    import numpy as np
    import optuna
    from optuna.distributions import CategoricalDistribution, IntDistribution
    from optuna.study import StudyDirection
    from optuna.trial import TrialState
except Exception as e:  # reported by the C++ side, naming the interpreter
    IMPORT_ERROR = f"{type(e).__name__}: {e}"
else:
    IMPORT_ERROR = None


class UsageError(ValueError):
    """A mistake in the options or storage the user gave; reported as a usage error.

    Messages leave out the strategy's name: ktune puts it in front."""


class Unavailable(RuntimeError):
    """A package the chosen sampler needs is missing; reported like a missing Optuna."""


# Options ktune handles itself for every Optuna sampler (optuna_strategies.cpp), listed in
# messages about unknown options.
KTUNE_OPTIONS = ("constraints", "duplicates", "max_rejections", "study_name", "study_storage")

# Packages a sampler imports beyond Optuna, and the Debian package that has them.
NEEDS = {"cmaes": ("cmaes", "python3-cmaes"), "qmc": ("scipy.stats.qmc", "python3-scipy")}


def interpreter():
    where = f"{sys.executable or '?'}, prefix {sys.prefix}"
    return f"Python {sys.version.split()[0]} ({where})"


def describe():
    if IMPORT_ERROR is not None:
        return f"{interpreter()}, no Optuna ({IMPORT_ERROR})"
    return f"{interpreter()}, Optuna {optuna.__version__}"


def _bool(text):
    low = text.strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise ValueError("expected true or false")


def _int(text):
    return int(text.strip(), 0)


def _choice(*names):
    def parse(text):
        if text not in names:
            raise ValueError("expected one of " + ", ".join(names))
        return text

    parse.names = names
    return parse


def _crossover(text):
    from optuna.samplers import nsgaii

    kinds = {
        "uniform": nsgaii.UniformCrossover,
        "blxalpha": nsgaii.BLXAlphaCrossover,
        "sbx": nsgaii.SBXCrossover,
        "vsbx": nsgaii.VSBXCrossover,
        "undx": nsgaii.UNDXCrossover,
        "spx": nsgaii.SPXCrossover,
    }
    if text not in kinds:
        raise ValueError("expected one of " + ", ".join(kinds))
    return kinds[text]()


# Options per sampler: name -> parser of the text value. Each maps to the sampler's own keyword
# argument of the same name (Optuna 3.1); the seed always comes from ktune's --seed.
OPTIONS = {
    "tpe": {
        "cached": _bool,  # ktune's: CachedTPESampler (default) or Optuna's TPESampler as it is
        "n_startup_trials": _int,
        "n_ei_candidates": _int,
        "multivariate": _bool,
        "group": _bool,
        "constant_liar": _bool,
        "consider_prior": _bool,
        "prior_weight": float,
        "consider_magic_clip": _bool,
        "consider_endpoints": _bool,
    },
    "cmaes": {
        "n_startup_trials": _int,
        "sigma0": float,
        "restart_strategy": _choice("ipop"),
        "popsize": _int,
        "inc_popsize": _int,
        "use_separable_cma": _bool,
        "with_margin": _bool,
        "consider_pruned_trials": _bool,
    },
    "nsgaii": {
        "sorted": _bool,  # ktune's: SortedNSGAIISampler (default) or Optuna's NSGAIISampler
        "population_size": _int,
        "mutation_prob": float,
        "crossover": _crossover,
        "crossover_prob": float,
        "swapping_prob": float,
    },
    "qmc": {
        "qmc_type": _choice("sobol", "halton"),
        "scramble": _bool,
    },
    "random": {},
    "grid": {},  # every trial is enqueued with fixed params by ktune
}


def make_sampler(name, seed, options):
    if name not in OPTIONS:
        raise UsageError(f"unknown Optuna sampler '{name}'; known: {', '.join(OPTIONS)}")
    known = OPTIONS[name]
    kwargs = {}
    for key, text in options:
        if key not in known:
            listed = ", ".join(sorted(known)) or "none"
            raise UsageError(
                f"no option '{key}'; its options: {listed}; "
                f"and for every Optuna sampler: {', '.join(KTUNE_OPTIONS)}"
            )
        try:
            kwargs[key] = known[key](text)
        except ValueError as e:
            raise UsageError(f"option {key}={text}: {e}") from None
    if name in NEEDS:
        module, package = NEEDS[name]
        try:
            __import__(module)
        except Exception as e:
            raise Unavailable(
                f"needs {module.split('.')[0]} in the embedded {interpreter()}: "
                f"import {module} failed: {type(e).__name__}: {e}; apt-get install {package}"
            ) from None
    seed = int(seed) % (2**32)  # numpy's RandomState takes 32 bits
    s = optuna.samplers
    if name == "tpe":
        cached = kwargs.pop("cached", True) and OPTUNA_31
        tpe = CachedTPESampler if cached else s.TPESampler
        return tpe(seed=seed, warn_independent_sampling=False, **kwargs)
    if name == "cmaes":
        return s.CmaEsSampler(seed=seed, warn_independent_sampling=False, **kwargs)
    if name == "nsgaii":
        fast = kwargs.pop("sorted", True) and OPTUNA_31
        nsga = SortedNSGAIISampler if fast else s.NSGAIISampler
        return nsga(seed=seed, **kwargs)
    if name == "qmc":
        return s.QMCSampler(seed=seed, warn_independent_sampling=False, **kwargs)
    return s.RandomSampler(seed=seed)


# --- NSGA-II's ranks of one objective by sorting ------------------------------------------------
#
# Optuna 3.1's NSGAIISampler ranks a parent population by Pareto dominance, testing every pair of
# trials in Python (_fast_non_dominated_sort): about 10^4 calls of _dominates for 2 x 50 trials,
# and with ktune asking ahead the generation in progress always has running trials, so the
# ranking's cache misses and it runs again at most asks (17 ms per trial at 1000 trials,
# docs/optuna.md). With one objective and no constraints, trial p dominates trial q exactly when
# p's value is the better, so rank r is the trials of the r-th best distinct value.
# SortedNSGAIISampler finds them that way and keeps each rank's order as Optuna's swap-and-pop
# loop leaves it (that order reaches the crossover's random choices), stopping once the ranks
# fill the population, which is all _select_elite_population reads; anything else (several
# objectives, constraints, a NaN value) runs Optuna's own code. tests/optuna/test_ktune_optuna.py
# holds the two samplers' proposals side by side.


class SortedNSGAIISampler(optuna.samplers.NSGAIISampler if IMPORT_ERROR is None else object):
    """NSGAIISampler whose ranking of a single objective's population is a sort."""

    def _fast_non_dominated_sort(self, population, directions):
        if self._constraints_func is not None or len(directions) != 1:
            return super()._fast_non_dominated_sort(population, directions)
        sign = -1.0 if directions[0] == StudyDirection.MAXIMIZE else 1.0
        key = {}
        for t in population:
            v = t.values[0] if t.values is not None and len(t.values) == 1 else None
            if v is None or math.isnan(v):
                return super()._fast_non_dominated_sort(population, directions)
            key[t.number] = sign * v
        ranks, ranked = [], 0
        while population and ranked < self._population_size:
            best = min(key[t.number] for t in population)
            rank, i = [], 0
            while i < len(population):  # Optuna's loop, its test a comparison with the best
                if key[population[i].number] == best:
                    individual = population[i]
                    if i == len(population) - 1:
                        population.pop()
                    else:
                        population[i] = population.pop()
                    rank.append(individual)
                else:
                    i += 1
            ranks.append(rank)
            ranked += len(rank)
        return ranks


# --- TPE without its per-ask cost -----------------------------------------------------------
#
# Optuna 3.1's TPESampler, at every ask and for every parameter, reads every trial of the study,
# builds two Parzen estimators (l of the best trials, g of the rest) and scores 24 candidates
# drawn from l by log l(x) - log g(x), through truncated normals evaluated one number at a time in
# Python: 71 ms per trial at 1000 trials (docs/optuna.md). CachedTPESampler makes the same
# proposals for a few milliseconds:
#   - each finished trial is read once, into arrays (_TrialTable);
#   - the estimators are fitted once per set of finished trials, for every parameter of the ask
#     at once, and kept until another trial finishes: asks without a tell in between (a batch, a
#     duplicate's re-ask) share a fit;
#   - ktune's parameters are value indices, a few values each, so a fit is a table over the
#     values: log l(x) - log g(x), and for each component of l its cumulative mass over the
#     values, in which the draw of a candidate (a truncated normal's inverse CDF, rounded) is a
#     search. Components of one mean and width have one density, computed once for each such pair
#     by the function Optuna uses (_truncnorm._log_gauss_mass);
#   - every parameter is drawn in one call (sample_relative) instead of one call each.
# The fit follows Optuna's formulas (bounds, weights, the components' widths from their order
# under the same np.argsort, the magic clip, the prior), and the draws consume the sampler's
# random numbers in the order TPESampler.sample_independent does, parameter after parameter, so
# the proposals are TPESampler's (tests/optuna/test_ktune_optuna.py holds them side by side), up
# to rounding where two candidates' scores differ by about 1e-16. It covers independent sampling
# of a single objective over integer (not log) and categorical distributions, which is what ktune
# declares; anything else (multivariate, group, constant_liar, other distributions) runs
# TPESampler's own code, and with an Optuna other than 3.1, whose internals this follows,
# optuna:tpe is TPESampler itself.

_FINAL = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL) if IMPORT_ERROR is None else ()
# Scores closer than this to the best are checked against TPESampler's own sum (_settle): the
# order of a sum moves a score by about 1e-15.
_TIE = 1e-9
# The Optuna whose internals CachedTPESampler and Study (a study in memory) follow.
OPTUNA_31 = IMPORT_ERROR is None and optuna.__version__.startswith("3.1.")


class _TrialTable:
    """The finished trials of one study as arrays, each trial read once: its score as Optuna's
    _get_observation_pairs makes it (single objective, no constant liar) and its parameters in
    their internal representation (NaN where a trial lacks one)."""

    def __init__(self, key):
        self.key = key
        self.scanned = 0  # every trial before this position in the study's list is finished
        self.rows = {}  # trial number -> row
        self.columns = {}  # param name -> column
        self.size = 0
        self.numbers = np.empty(64, dtype=np.int64)
        self.steps = np.empty(64)
        self.values = np.empty(64)
        self.params = np.full((64, 0), math.nan)
        self.version = 0  # grows with every finished trial read
        self.split = None  # (version, trials, params in trial order, below, above)

    def read(self, study, sign):
        trials = study._storage.get_all_trials(study._study_id, deepcopy=False)
        finished_before = True
        for i in range(self.scanned, len(trials)):
            t = trials[i]
            if t.state not in _FINAL:
                finished_before = False
                continue
            if finished_before:
                self.scanned = i + 1
            if t.number not in self.rows:
                self.add(t, sign)

    def add(self, t, sign):
        if t.state == TrialState.COMPLETE:
            if t.values is None:
                return
            step, value = -math.inf, sign * t.values[0]
        elif t.state == TrialState.PRUNED:
            if t.intermediate_values:
                step, value = max(t.intermediate_values.items())
                step = -step
                value = math.inf if math.isnan(value) else sign * value
            else:
                step, value = 1, 0.0
        else:
            self.rows[t.number] = None  # failed: not an observation
            return
        i = self.size
        if i == len(self.numbers):
            self.numbers = np.resize(self.numbers, 2 * i)
            self.steps = np.resize(self.steps, 2 * i)
            self.values = np.resize(self.values, 2 * i)
            params = np.full((2 * i, self.params.shape[1]), math.nan)
            params[:i] = self.params[:i]
            self.params = params
        for name in t.params:
            if name not in self.columns:
                self.columns[name] = self.params.shape[1]
                self.params = np.concatenate(
                    (self.params, np.full((len(self.params), 1), math.nan)), axis=1)
        self.numbers[i] = t.number
        self.steps[i] = step
        self.values[i] = value
        row = self.params[i]
        for name, v in t.params.items():
            row[self.columns[name]] = t.distributions[name].to_internal_repr(v)
        self.rows[t.number] = i
        self.size = i + 1
        self.version += 1

    def split_by(self, gamma):
        """The observations in trial order and the indices of the best gamma(n) (below) and of the
        rest (above), each in trial order: _split_observation_pairs."""
        if self.split is None or self.split[0] != self.version:
            n = self.size
            order = np.argsort(self.numbers[:n], kind="stable")
            ranked = np.lexsort((self.values[:n][order], self.steps[:n][order]))  # stable
            n_below = gamma(n)
            self.split = (self.version, n, self.params[:n][order], np.sort(ranked[:n_below]),
                          np.sort(ranked[n_below:]))
        return self.split


class _Fit:
    """One parameter's estimators for one set of finished trials, as tables over its values."""

    __slots__ = ("cdf", "draw", "score", "categorical", "group", "row", "exact")


class CachedTPESampler(optuna.samplers.TPESampler if IMPORT_ERROR is None else object):
    """TPESampler's proposals at a fraction of its cost per ask (see above)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._own = not (self._multivariate or self._group or self._constant_liar
                         or self._constraints_func is not None)
        self._table = None
        self._asking = None  # (study, trial number) of the last read: one read per ask
        self._space = {}  # param name -> distribution, as last asked
        self._fits = {}  # param name -> (distribution, _Fit), for _fitted
        self._fitted = None  # the table version _fits belong to
        self._mass_ids = {}  # (low, step, values, mu, sigma) -> row of _mass_rows
        self._mass_rows = np.zeros((16, 1))
        self._weight_memo = {}  # observations -> normalized weights
        self.fit_count = 0  # parameters fitted (both estimators of one count once)

    # Optuna calls sample_relative once per trial, then sample_independent for each parameter
    # left out. After the start-up trials every parameter of the last ask but the fixed ones is
    # drawn in sample_relative, with the random numbers sample_independent would have drawn.

    def infer_relative_search_space(self, study, trial):
        if not self._own:
            return super().infer_relative_search_space(study, trial)
        fixed = trial.system_attrs.get("fixed_params", ())
        return {name: d for name, d in self._space.items() if name not in fixed and not d.single()}

    def sample_relative(self, study, trial, search_space):
        if not self._own:
            return super().sample_relative(study, trial, search_space)
        if not search_space or study._is_multi_objective():
            return {}
        split = self._read(study, trial)
        if split[1] < self._n_startup_trials:
            return {}
        names = list(search_space)
        fits = [self._fit(split, name, search_space[name]) for name in names]
        size = self._n_ei_candidates
        # Two draws of n_ei_candidates numbers per parameter, one parameter after another:
        # RandomState.choice's, then uniform's or rand's (random_sample's numbers, all of them).
        u = self._rng.random_sample(2 * size * len(names)).reshape(len(names), 2, size)
        best = [0] * len(names)
        together = {}  # integer parameters fitted together are drawn together
        for j, fit in enumerate(fits):
            if fit.group is None:
                best[j] = self._pick(fit, u[j, 0], u[j, 1])
            else:
                together.setdefault(id(fit.group), (fit.group, [], []))
                together[id(fit.group)][1].append(j)
                together[id(fit.group)][2].append(fit.row)
        for group, js, rows in together.values():
            rows = np.array(rows)[:, None]
            active = group.cdf.searchsorted(u[js, 0], side="right")
            picks = np.sum(group.draw[rows, active] <= u[js, 1][:, :, None], axis=2)
            scores = group.score[rows, picks]
            chosen = picks[np.arange(len(js)), np.argmax(scores, axis=1)]
            near = scores >= scores.max(axis=1)[:, None] - _TIE
            tied = np.flatnonzero(np.where(near, picks, -1).max(axis=1)
                                  != np.where(near, picks, len(group.score[0])).min(axis=1))
            for i in tied.tolist():
                chosen[i] = self._settle(group, rows[i, 0], picks[i], near[i])
            for j, b in zip(js, chosen.tolist()):
                best[j] = b
        return {name: d.choices[b] if isinstance(d, CategoricalDistribution) else d.low + b * d.step
                for (name, d), b in zip(search_space.items(), best)}

    def sample_independent(self, study, trial, param_name, param_distribution):
        dist = param_distribution
        if not self._own or study._is_multi_objective() or not (
                isinstance(dist, CategoricalDistribution)
                or (isinstance(dist, IntDistribution) and not dist.log)):
            return super().sample_independent(study, trial, param_name, param_distribution)
        self._space[param_name] = dist
        split = self._read(study, trial)
        if split[1] < self._n_startup_trials:
            return self._random_sampler.sample_independent(study, trial, param_name, dist)
        return self._sample(study, trial, split, param_name, dist)

    def _read(self, study, trial):
        key = (id(study._storage), study._study_id)
        if self._asking != (key, trial.number):  # the first draw of this ask
            if self._table is None or self._table.key != key:
                self._table = _TrialTable(key)
            sign = 1.0 if study.direction == StudyDirection.MINIMIZE else -1.0
            self._table.read(study, sign)
            self._asking = (key, trial.number)
        return self._table.split_by(self._gamma)

    def _sample(self, study, trial, split, name, dist):
        fit = self._fit(split, name, dist)
        size = self._n_ei_candidates
        u_component = self._rng.random_sample(size)
        best = self._pick(fit, u_component, self._rng.random_sample(size))
        return dist.choices[best] if fit.categorical else dist.low + best * dist.step

    def _pick(self, fit, u_component, u_value):
        """_ParzenEstimator.sample of l (a component per candidate, drawn as RandomState.choice
        does, then a value of it), and the candidate of the highest log l(x) - log g(x)."""
        active = fit.cdf.searchsorted(u_component, side="right")
        if fit.categorical:  # its scores are TPESampler's to the bit
            picks = np.sum(fit.draw[active] < u_value[:, None], axis=1)
            return int(picks[np.argmax(fit.score[picks])])
        picks = np.sum(fit.draw[active] <= u_value[:, None], axis=1)
        scores = fit.score[picks]
        near = scores >= scores.max() - _TIE
        if picks[near].min() != picks[near].max():
            return self._settle(fit.group, fit.row, picks, near)
        return int(picks[np.argmax(scores)])

    def _settle(self, group, j, picks, near):
        """The candidate TPESampler picks among candidates of different values whose scores tie
        up to rounding (as when l and g are the same): decided by the scores as TPESampler's
        log_pdf computes them, summed over the components in their order."""
        values = np.unique(picks[near])
        score = self._exact_score(group, j, values) - self._exact_score(group, j, values, 1)
        exact = np.full(len(picks), -np.inf)
        exact[near] = score[np.searchsorted(values, picks[near])]
        return int(picks[np.argmax(exact)])

    def _exact_score(self, group, j, values, part=0):
        """log l (part 0) or log g (part 1) of parameter j of a group at the given values, as
        _ParzenEstimator.log_pdf computes it: per component, then its logsumexp over the
        components in their order."""
        masses, change, orders, sizes, ns, runs = group.exact
        if runs is None:  # the run of each place in the sorted order
            runs = group.exact[5] = np.cumsum(change) - 1
        P, m = len(orders[0]), sizes[part]
        first = (0 if part == 0 else P * sizes[0]) + j * m
        component = np.empty(m, dtype=np.intp)
        component[orders[part][j]] = runs[first:first + m]
        weighted = np.ascontiguousarray(masses[component][:, values].T) + np.log(
            self._weights_of(ns[part]))
        top = weighted.max(axis=1)
        return np.log(np.exp(weighted - top[:, np.newaxis]).sum(axis=1)) + top

    def _fit(self, split, name, dist):
        """The fit of one parameter for the current finished trials. The first call after a trial
        finished fits every integer parameter of the last ask at once."""
        if self._fitted != split[0]:
            self._fits = {}
            self._fitted = split[0]
        got = self._fits.get(name)
        if got is not None and got[0] == dist:
            return got[1]
        _, n, params, below_i, above_i = split
        columns = self._table.columns
        below_all, above_all = params[below_i], params[above_i]
        partial = np.isnan(below_all).any(axis=0) | np.isnan(above_all).any(axis=0)

        def observations(other):
            if other not in columns:
                return np.empty(0), np.empty(0)
            c = columns[other]
            below, above = below_all[:, c], above_all[:, c]
            if partial[c]:  # trials without it (of another space) are left out
                below, above = below[~np.isnan(below)], above[~np.isnan(above)]
            return below, above

        if isinstance(dist, CategoricalDistribution):
            self._fits[name] = (dist, self._categorical(*observations(name), dist))
            return self._fits[name][1]
        batches = {}  # parameters whose estimators have the same numbers of observations
        for other, d in self._space.items():  # holds name: dist
            if isinstance(d, CategoricalDistribution) or d.single() or (
                    other in self._fits and self._fits[other][0] == d):
                continue
            if other in columns and not partial[columns[other]]:
                batches.setdefault(None, []).append((other, d))
            else:
                below, above = observations(other)
                batches.setdefault((len(below), len(above)), []).append((other, d, below, above))
        for size, batch in batches.items():
            if size is None:
                cols = [columns[other] for other, _ in batch]
                self._numerical([other for other, _ in batch], [d for _, d in batch],
                                below_all[:, cols].T, above_all[:, cols].T)
            else:
                self._numerical([b[0] for b in batch], [b[1] for b in batch],
                                np.stack([b[2] for b in batch]), np.stack([b[3] for b in batch]))
        return self._fits[name][1]

    def _weights_of(self, n):
        """_ParzenEstimator._calculate_weights of n observations (kept: read only)."""
        weights = self._weight_memo.get(n)
        if weights is None:
            w = self._weights(n)[:n]
            if self._parzen_estimator_parameters.consider_prior or n == 0:
                weights = np.zeros(n + 1)
                weights[:-1] = w
                weights[-1] = self._prior_weight
            else:
                weights = np.array(w, dtype=float)
            weights /= weights.sum()
            weights.flags.writeable = False
            if len(self._weight_memo) >= 256:
                self._weight_memo = {}
            self._weight_memo[n] = weights
        return weights

    def _cdf_of(self, n):
        """What RandomState.choice(len(weights), p=weights) draws from, for n observations."""
        cdf = self._weight_memo.get(-1 - n)
        if cdf is None:
            cdf = self._weights_of(n).cumsum()
            cdf /= cdf[-1]
            self._weight_memo[-1 - n] = cdf
        return cdf

    def _categorical_weights(self, observations, k):
        """_ParzenEstimator._calculate_categorical_params."""
        observations = observations.astype(int)
        n = len(observations)
        if self._parzen_estimator_parameters.consider_prior or n == 0:
            weights = np.full((n + 1, k), fill_value=self._prior_weight / (n + 1))
        else:
            weights = np.full((n, k), fill_value=self._prior_weight / n)
        weights[np.arange(n), observations] += 1
        weights /= weights.sum(axis=1, keepdims=True)
        return weights

    def _categorical(self, below, above, dist):
        k = len(dist.choices)
        fit = _Fit()
        fit.categorical = True
        fit.group = None
        fit.cdf = self._cdf_of(len(below))
        weights_below = self._categorical_weights(below, k)
        fit.draw = np.cumsum(weights_below, axis=1)
        # _ParzenEstimator.log_pdf of a single categorical parameter
        log_l = np.log(np.inner(weights_below.T, self._weights_of(len(below))))
        log_g = np.log(np.inner(self._categorical_weights(above, k).T,
                                self._weights_of(len(above))))
        fit.score = log_l - log_g
        self.fit_count += 1
        return fit

    def _numerical(self, names, dists, below, above):
        """l and g of integer parameters whose below and above sets have the same sizes, all at
        once: _ParzenEstimator's bounds, means, widths and weights (_calculate_parzen_bounds,
        _calculate_numerical_params, _calculate_weights), each parameter a row, its components
        in their sorted order. Components of one mean and width have one density, so a run of
        them in that order is one row of log masses over the values, with the run's weight."""
        p = self._parzen_estimator_parameters
        if len(self._mass_ids) >= 100000:  # a bound that ktune's spaces never reach
            self._mass_ids, self._mass_rows = {}, np.zeros((16, 1))
        P = len(names)
        step = np.array([d.step for d in dists], dtype=float)
        low = np.array([d.low for d in dists], dtype=float) - 0.5 * step
        high = np.array([d.high for d in dists], dtype=float) + 0.5 * step
        counts = [(d.high - d.low) // d.step + 1 for d in dists]
        width = (high - low)[:, None]
        each = np.arange(P)[:, None]
        mus_of, sigmas_of, weights_of, orders, sizes, ns = [], [], [], [], [], []
        for obs in (below, above):  # a row per parameter
            n = obs.shape[1]
            if p.consider_prior or n == 0:
                mus = np.empty((P, n + 1))
                mus[:, :n] = obs
                mus[:, n] = 0.5 * (low + high)
            else:
                mus = obs.astype(float)
            m = mus.shape[1]
            order = np.argsort(mus, axis=1)  # each row as Optuna's np.argsort(mus)
            ends = np.empty((P, m + 2))
            ends[:, 0] = low
            ends[:, 1:-1] = np.take(mus, order + each * m)
            ends[:, -1] = high
            gaps = ends[:, 1:] - ends[:, :-1]
            sigmas = np.maximum(gaps[:, :-1], gaps[:, 1:])
            if not p.consider_endpoints and m >= 2:
                sigmas[:, 0] = gaps[:, 1]
                sigmas[:, -1] = gaps[:, -2]
            if p.consider_magic_clip:
                np.maximum(sigmas, width / min(100.0, 1.0 + m), out=sigmas)
            else:
                np.maximum(sigmas, 1e-12, out=sigmas)
            np.minimum(sigmas, width, out=sigmas)
            if p.consider_prior or n == 0:
                sigmas[np.arange(P), np.argmax(order == n, axis=1)] = high - low
            mus_of.append(ends[:, 1:-1].ravel())
            sigmas_of.append(sigmas.ravel())
            weights_of.append(np.take(self._weights_of(n), order).ravel())
            orders.append(order)
            sizes.append(m)
            ns.append(n)
        mus = np.concatenate(mus_of)
        sigmas = np.concatenate(sigmas_of)
        mb, ma = sizes
        row_starts = np.concatenate((np.arange(P) * mb, P * mb + np.arange(P) * ma))
        change = np.empty(len(mus), dtype=bool)
        change[0] = True
        np.not_equal(mus[1:], mus[:-1], out=change[1:])
        change[1:] |= sigmas[1:] != sigmas[:-1]
        change[row_starts] = True
        starts = np.flatnonzero(change)
        run_weights = np.add.reduceat(np.concatenate(weights_of), starts)
        row_of = np.searchsorted(row_starts, starts, side="right") - 1  # l: 0..P-1, g: P..2P-1
        low_l, step_l = low.tolist(), step.tolist()
        keys = [(low_l[j], step_l[j], counts[j], mu, sigma) for j, mu, sigma in zip(
            (row_of % P).tolist(), mus[starts].tolist(), sigmas[starts].tolist())]
        ids = [self._mass_ids.get(key) for key in keys]
        if None in ids:
            ids = [self._mass(key) if i is None else i for i, key in zip(ids, keys)]
        masses = self._mass_rows[ids]  # runs x values (0 beyond a parameter's values)
        weighted = masses + np.log(run_weights)[:, None]
        firsts = np.searchsorted(row_of, np.arange(2 * P))
        top = np.maximum.reduceat(weighted, firsts, axis=0)
        log_pdf = np.log(np.add.reduceat(np.exp(weighted - top[row_of]), firsts, axis=0)) + top
        # For the draw from l: each component's cumulative mass over the values.
        cdf = np.cumsum(np.exp(masses), axis=1)
        below_runs = np.empty((P, mb), dtype=np.intp)
        below_runs[each, orders[0]] = (np.cumsum(change[:P * mb]) - 1).reshape(P, mb)
        group = _Fit()  # the parameters' tables, stacked: drawn together by sample_relative
        group.cdf = self._cdf_of(ns[0])
        kmax = max(counts)
        beyond = np.arange(kmax - 1) >= np.array(counts)[:, None] - 1  # never drawn
        # parameters x components of l x values but the last
        group.draw = np.where(beyond[:, None, :], np.inf, cdf[below_runs, :kmax - 1])
        group.score = log_pdf[:P, :kmax] - log_pdf[P:, :kmax]
        # For the exact scores of near ties (_exact_score): each component's row of masses.
        group.exact = [masses, change, orders, sizes, ns, None]
        for j, name in enumerate(names):
            fit = _Fit()
            fit.categorical = False
            fit.cdf = group.cdf
            fit.draw = group.draw[j]
            fit.score = group.score[j]
            fit.group, fit.row = group, j
            self._fits[name] = (dists[j], fit)
            self.fit_count += 1

    def _mass(self, key):
        """Row of log masses of each value's cell under one component, less the log of its mass
        within the bounds: the terms of _ParzenEstimator.log_pdf for an integer parameter."""
        from optuna.samplers._tpe import _truncnorm

        got = self._mass_ids.get(key)
        if got is not None:
            return got
        low, step, k, mu, sigma = key
        high = low + k * step
        values = low + 0.5 * step + step * np.arange(k, dtype=float)
        upper = np.minimum(values + step / 2.0, high)
        lower = np.maximum(values - step / 2.0, low)
        mus, sigmas = np.asarray([mu]), np.asarray([sigma])
        log_gauss_mass = _truncnorm._log_gauss_mass((lower[:, None] - mus) / sigmas,
                                                    (upper[:, None] - mus) / sigmas)
        log_p_accept = _truncnorm._log_gauss_mass((low - mus) / sigmas, (high - mus) / sigmas)
        i = len(self._mass_ids)
        rows = self._mass_rows
        if i == len(rows) or k > rows.shape[1]:
            grown = np.zeros((2 * len(rows) if i == len(rows) else len(rows),
                              max(k, rows.shape[1])))
            grown[:len(rows), :rows.shape[1]] = rows
            self._mass_rows = rows = grown
        rows[i, :k] = (log_gauss_mass - log_p_accept)[:, 0]
        self._mass_ids[key] = i
        return i


class _FileLock:
    """An fcntl lock on a file of its own: the kernel releases it when its process dies, so a
    worker killed while appending to a journal never leaves the others waiting (Optuna's own
    journal locks are files that outlive their process). Optuna's journal calls acquire and
    release around each append."""

    def __init__(self, path):
        self.path = path + ".lock"
        self.fd = None

    def acquire(self, shared=False):
        import fcntl

        if self.fd is None:
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.lockf(self.fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        return True

    def release(self):
        import fcntl

        fcntl.lockf(self.fd, fcntl.LOCK_UN)


def _journal_file(path):
    """Optuna's journal file, its appends and its reads under an fcntl lock. Optuna 3.1 reads
    without a lock: a reader that meets a line another process is still appending takes its two
    halves for two lines and fails (JSONDecodeError) with four workers on one journal.

    Appends are written and flushed but not fsynced: Optuna syncs every append, about seven a
    trial, which cost 50 ms a trial on the development machine's disk against 2.6 ms without
    (docs/scale-out.md). What a process wrote survives its being killed and is seen by the other
    processes at once (on NFS, at the file's close, which follows every append); a power failure
    may lose the last appends, as it may lose the results database's last commits (WAL,
    synchronous=NORMAL). The results database, not the journal, holds the measurements."""
    import json

    from optuna.storages import JournalFileStorage

    class LockedJournalFile(JournalFileStorage):
        def read_logs(self, log_number_from):
            # Nothing new when the file ends where the last read did (most reads of a worker
            # whose own writes it has read back): a stat instead of a lock, an open and a read.
            offset = self._log_number_offset.get(log_number_from)
            if offset is not None:
                try:
                    if os.stat(self._file_path).st_size == offset:
                        return []
                except OSError:
                    pass
            self._lock.acquire(shared=True)
            try:
                return super().read_logs(log_number_from)
            finally:
                self._lock.release()

        def append_logs(self, logs):
            text = "\n".join(json.dumps(log) for log in logs) + "\n"
            self._lock.acquire()
            try:
                with open(self._file_path, "ab") as f:
                    f.write(text.encode("utf-8"))
            finally:
                self._lock.release()

    return LockedJournalFile(path, lock_obj=_FileLock(path + ".ktune-append"))


def _journal_storage(backend):
    """Optuna's JournalStorage over a journal file or Redis. With Optuna 3.1 (whose internals it
    follows), a running trial's parameters and attributes are written in one append with the next
    operation that needs one (its state, a read of the study, or the release of the study's
    lock) instead of an append and a read each (docs/scale-out.md#scaling). Other workers see a trial's parameters no later than the
    release of the study lock under which it was drawn, so what they draw under the lock still
    excludes it."""
    from optuna.storages import JournalStorage

    if not OPTUNA_31:
        return JournalStorage(backend)
    from optuna.distributions import distribution_to_json
    from optuna.storages._journal.storage import JournalOperation

    class BatchedJournalStorage(JournalStorage):
        def __init__(self, backend):
            self._pending = []
            super().__init__(backend)

        def _defer(self, op_code, fields):
            with self._thread_lock:
                self._pending.append(
                    {"op_code": op_code, "worker_id": self._replay_result.worker_id, **fields})

        def flush(self):
            with self._thread_lock:
                self._flush()

        def _flush(self):  # under _thread_lock
            if self._pending:
                logs, self._pending = self._pending, []
                self._backend.append_logs(logs)

        def _write_log(self, op_code, extra_fields):
            logs, self._pending = self._pending, []
            logs.append(
                {"op_code": op_code, "worker_id": self._replay_result.worker_id, **extra_fields})
            self._backend.append_logs(logs)

        def _sync_with_backend(self):
            self._flush()
            super()._sync_with_backend()

        def get_trial_system_attrs(self, trial_id):
            # Asked before each parameter a trial suggests (Trial._get_latest_trial): while this
            # worker has writes pending, its running trial's system attributes are what it read
            # last and what it wrote since; no other worker writes them.
            with self._thread_lock:
                if not self._pending:
                    self._sync_with_backend()
                attrs = dict(self._replay_result.get_trial(trial_id).system_attrs)
                for log in self._pending:
                    if (log["op_code"] == JournalOperation.SET_TRIAL_SYSTEM_ATTR
                            and log["trial_id"] == trial_id):
                        attrs.update(log["system_attr"])
                return attrs

        def set_trial_param(self, trial_id, param_name, param_value_internal, distribution):
            self._defer(JournalOperation.SET_TRIAL_PARAM, {
                "trial_id": trial_id,
                "param_name": param_name,
                "param_value_internal": param_value_internal,
                "distribution": distribution_to_json(distribution),
            })

        def set_trial_user_attr(self, trial_id, key, value):
            self._defer(JournalOperation.SET_TRIAL_USER_ATTR,
                        {"trial_id": trial_id, "user_attr": {key: value}})

        def set_trial_system_attr(self, trial_id, key, value):
            self._defer(JournalOperation.SET_TRIAL_SYSTEM_ATTR,
                        {"trial_id": trial_id, "system_attr": {key: value}})

    return BatchedJournalStorage(backend)


REDIS_SCHEMES = ("redis://", "rediss://", "unix://")
# How long the study lock of a Redis storage outlives a worker killed while holding it: a lock
# is held only while a worker reads the study and draws (well under a second).
REDIS_LOCK_SECONDS = 10


# How long a check of a storage server waits for it to answer before it is refused.
CONNECT_SECONDS = 10


def check_storage(url):
    """Refuses a storage that cannot hold the study before its lock or any file is made: a journal
    or SQLite file in a folder that does not exist or cannot be written, a directory, a scheme
    that is none of Optuna's storages, a server that does not answer. Raises UsageError naming
    the URL and what is wrong."""

    def refuse(what):
        raise UsageError(f"study_storage '{url}': {what}")

    def check_file(path):
        if not path:
            refuse("names no file")
        if "\0" in path:
            refuse("the path holds a NUL character")
        if os.path.isdir(path):
            refuse(f"{path} is a directory, not a file")
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            refuse(f"the folder {folder} does not exist")
        if os.path.exists(path):
            if not os.path.isfile(path):
                refuse(f"{path} is not a regular file")
            if not os.access(path, os.R_OK | os.W_OK):
                refuse(f"{path} cannot be read and written")
        elif not os.access(folder, os.W_OK | os.X_OK):
            refuse(f"the folder {folder} cannot be written")

    if url.startswith("journal:"):
        check_file(url[len("journal:"):])
        return
    if url.startswith(REDIS_SCHEMES):
        try:
            import redis
        except ImportError:
            refuse("the Python package redis is missing (apt-get install python3-redis)")
        # A Unix socket's connection takes no connect timeout, only socket_timeout.
        timeout = {"socket_timeout" if url.startswith("unix://") else "socket_connect_timeout":
                   CONNECT_SECONDS}
        client = None
        try:
            client = redis.Redis.from_url(url, **timeout)
            client.ping()
        except redis.exceptions.RedisError as e:
            refuse(f"the Redis server does not answer ({e})")
        except Exception as e:  # redis-py's own parsing: ValueError, IndexError, TypeError
            refuse(f"not a Redis URL redis-py can use ({type(e).__name__}: {e})")
        finally:
            if client is not None:
                client.connection_pool.disconnect()
        return
    if "://" not in url:
        refuse("is neither journal:PATH, redis://HOST:PORT nor a database URL such as "
               "sqlite:///PATH")
    check_database_url(url, refuse, check_file)


def check_database_url(url, refuse, check_file):
    """check_storage for an SQLAlchemy URL: a known dialect whose driver is installed, a file in
    a folder that can take it for SQLite, a server that answers otherwise."""
    import sqlalchemy
    from sqlalchemy.engine.url import make_url
    from sqlalchemy.pool import NullPool

    try:
        parsed = make_url(url)
    except (sqlalchemy.exc.ArgumentError, ValueError) as e:
        refuse(f"not a database URL ({e})")
    try:
        parsed.get_dialect()
    except sqlalchemy.exc.NoSuchModuleError:
        refuse(f"'{parsed.drivername}' is not a storage Optuna knows; use journal:PATH, "
               "redis://HOST:PORT, sqlite:///PATH, postgresql://... or mysql://...")
    except ImportError as e:
        refuse(f"the database driver is missing ({e})")
    except Exception as e:  # a malformed driver name, ...
        refuse(f"not a database URL SQLAlchemy can use ({type(e).__name__}: {e})")
    if parsed.get_backend_name() == "sqlite":
        if not parsed.database or parsed.database == ":memory:":
            refuse("an SQLite storage is a file: sqlite:///PATH")
        check_file(parsed.database)
        return
    connect_args = {}
    if parsed.get_backend_name() in ("postgresql", "mysql"):
        connect_args["connect_timeout"] = CONNECT_SECONDS
    engine = None
    try:
        engine = sqlalchemy.create_engine(url, poolclass=NullPool, connect_args=connect_args)
        engine.connect().close()
    except ImportError as e:
        refuse(f"the database driver is missing ({e})")
    except sqlalchemy.exc.SQLAlchemyError as e:
        reason = (str(getattr(e, "orig", None) or e).strip().splitlines() or [""])[0]
        refuse(f"cannot connect ({reason})")
    except Exception as e:  # the driver's own parsing of the URL's parts
        refuse(f"cannot connect ({type(e).__name__}: {e})")
    finally:
        if engine is not None:
            engine.dispose()


def storage_errors():
    """What opening a storage raises where the storage, not ktune, is at fault."""
    errors = (ValueError, ImportError, OSError)
    try:
        import sqlalchemy.exc

        errors += (sqlalchemy.exc.SQLAlchemyError,)
    except ImportError:
        pass
    try:
        import redis.exceptions

        errors += (redis.exceptions.RedisError,)
    except ImportError:
        pass
    return errors


def make_storage(url):
    if not url:
        return None
    if url.startswith("journal:"):
        path = url[len("journal:"):]
        if not path:
            raise UsageError("study_storage journal:PATH needs a path")
        return _journal_storage(_journal_file(path))
    if url.startswith(REDIS_SCHEMES):
        try:
            import redis  # noqa: F401 (Optuna's JournalRedisStorage needs redis-py)
        except ImportError:
            raise UsageError(f"study_storage '{url}': the Python package redis is missing "
                             "(apt-get install python3-redis)") from None
        from optuna.storages import JournalRedisStorage

        return _journal_storage(JournalRedisStorage(url))
    if "://" not in url:
        raise UsageError(
            f"study_storage '{url}' is neither journal:PATH, redis://HOST:PORT nor a database URL "
            "such as sqlite:///PATH"
        )
    return url  # an RDB URL; create_study builds the RDBStorage


def _process_start(pid):
    """Start time of a process in clock ticks since boot (field 22 of /proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[19])


def _boot_id():
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return ""


# This process, as written on each trial it asks in a shared study (user attr ktune_worker), so
# that another worker can tell a trial whose process died from one still being measured.
WORKER = f"{socket.gethostname()}|{_boot_id()}|{os.getpid()}|{_process_start(os.getpid())}"

# A trial running longer than this is taken to be abandoned, whatever its process (another
# host's cannot be checked): no evaluation of ktune's lasts that long (the watchdog ends one
# after --timeout seconds).
STALE_SECONDS = 600


def _abandoned(trial, now):
    """A running trial whose process is gone. Every worker writes ktune_worker while it holds the
    study's lock, so a running trial read under the lock without it was left by a process that
    died inside its ask (or was not written by ktune). Read without the lock, it may be another
    worker's trial still being drawn: Optuna 3.1's Study.ask (optuna/study/study.py) creates the
    trial before it suggests the parameters, JournalStorage.create_new_trial
    (optuna/storages/_journal/storage.py) appends CREATE_TRIAL at once, which any reader's
    get_all_trials replays, and the parameters and ktune_worker follow with the next append
    (BatchedJournalStorage) or the release of the lock. So only Study.trials under the lock asks."""
    worker = trial.user_attrs.get("ktune_worker")
    if not worker:
        return True
    if worker:
        host, boot, pid, start = worker.split("|")
        here_host, here_boot = WORKER.split("|")[:2]
        if host == here_host and boot == here_boot:
            try:
                return _process_start(int(pid)) != int(start)
            except (OSError, ValueError, IndexError):
                return True
    started = trial.datetime_start
    return started is not None and (now - started).total_seconds() > STALE_SECONDS


class StudyLock:
    """One lock over every worker of a shared study, held while a worker reads the study and
    draws its next proposals, so that two workers never draw the same configuration.

    It dies with its process, so a killed worker never leaves the others waiting: an fcntl lock
    on a file beside a journal or SQLite storage, a session-level advisory lock of PostgreSQL
    (pg_advisory_lock) or MySQL (GET_LOCK) on a connection of its own. Redis has no lock that
    ends with its client, so there it is a Redis lock that expires REDIS_LOCK_SECONDS after a
    killed worker took it. Other storages get no lock (and no guarantee against two workers
    drawing one configuration at the same moment)."""

    def __init__(self, url, study_name):
        self.kind = None
        self.depth = 0
        self.fd = None
        self.conn = None
        name = study_name or "ktune"
        self.key = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)
        self.name = "ktune-" + hashlib.sha256(name.encode()).hexdigest()[:40]
        if url.startswith("journal:"):
            self.kind, self.path = "file", url[len("journal:"):] + ".ktune-lock"
        elif url.startswith("sqlite:///"):
            self.kind, self.path = "file", url[len("sqlite:///"):] + ".ktune-lock"
        elif url.startswith(REDIS_SCHEMES):
            import redis

            self.kind = "redis"
            # A waiting worker polls every 2 ms (redis-py waits 100 ms by default).
            self.lock = redis.Redis.from_url(url).lock(self.name, timeout=REDIS_LOCK_SECONDS,
                                                       sleep=0.002)
        elif url.startswith(("postgresql", "mysql")):
            import sqlalchemy
            from sqlalchemy.pool import NullPool

            self.kind = "postgresql" if url.startswith("postgresql") else "mysql"
            self.engine = sqlalchemy.create_engine(url, poolclass=NullPool)

    def acquire(self):
        if self.depth == 0 and self.kind == "file":
            import fcntl

            if self.fd is None:
                self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.lockf(self.fd, fcntl.LOCK_EX)
        elif self.depth == 0 and self.kind == "redis":
            self.lock.acquire(blocking=True)
        elif self.depth == 0 and self.kind is not None:
            from sqlalchemy import text

            if self.conn is None:
                # A session lock outside any transaction; held on this connection alone.
                self.raw = self.engine.connect()
                self.conn = self.raw.execution_options(isolation_level="AUTOCOMMIT")
            if self.kind == "postgresql":
                self.conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": self.key})
            else:
                self.conn.execute(text("SELECT GET_LOCK(:n, -1)"), {"n": self.name})
        self.depth += 1

    def release(self):
        if self.depth == 0:
            return
        self.depth -= 1
        if self.depth > 0:
            return
        if self.kind == "file":
            import fcntl

            fcntl.lockf(self.fd, fcntl.LOCK_UN)
        elif self.kind == "redis":
            import redis

            try:
                self.lock.release()
            except redis.exceptions.LockError:
                pass  # it expired while held: another worker may already hold it
        elif self.kind is not None:
            from sqlalchemy import text

            if self.kind == "postgresql":
                self.conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": self.key})
            else:
                self.conn.execute(text("SELECT RELEASE_LOCK(:n)"), {"n": self.name})


class Study:
    def __init__(self, sampler, seed, params, options, storage, study_name):
        self.names = [name for name, _, _ in params]
        self.distributions = {
            name: CategoricalDistribution(tuple(range(count))) if categorical
            else IntDistribution(0, count - 1)
            for name, count, categorical in params
        }
        self.shared = bool(storage)
        if storage:
            check_storage(storage)
        self.lock_ = StudyLock(storage, study_name) if storage else None
        self.study = None  # until created, under the lock
        try:
            # Several workers starting at once would race to create the study (and an RDB
            # storage's tables): the first creates, the others load.
            self.lock()
            self.study = optuna.create_study(
                storage=make_storage(storage),
                sampler=make_sampler(sampler, seed, options),
                study_name=study_name or None,
                direction="minimize",
                load_if_exists=True,
            )
        except UsageError:
            raise
        except storage_errors() as e:
            if storage:
                reason = str(e).strip().splitlines()[0] if str(e).strip() else ""
                raise UsageError(f"study_storage '{storage}': {type(e).__name__}: {reason}") \
                    from None
            raise
        finally:
            self.unlock()
        self.asked = {}  # trial number -> Trial, until told
        # A study in memory, which only this process writes, skips copies and searches Optuna 3.1
        # makes for any storage: at 1000 trials of 15 parameters they cost more than TPE itself.
        self.private = not self.shared and OPTUNA_31
        if self.private:
            # No trial waits in the queue (ask makes a trial of fixed parameters at once): the
            # look for one at each ask, a pass over every trial of the study, is left out.
            self.study._pop_waiting_trial_id = lambda: None

    def ask(self, fixed):
        if fixed is not None and self.private:
            # What enqueue_trial and ask make of fixed parameters, a running trial that has them,
            # without its deep copy of a template trial.
            storage = self.study._storage
            params = dict(zip(self.names, fixed))
            trial_id = storage.create_new_trial(self.study._study_id)
            storage.set_trial_system_attr(trial_id, "fixed_params", params)
            for name, value in params.items():
                dist = self.distributions[name]
                storage.set_trial_param(trial_id, name, dist.to_internal_repr(value), dist)
            trial = optuna.trial.Trial(self.study, trial_id)
        else:
            if fixed is not None:
                self.study.enqueue_trial(dict(zip(self.names, fixed)))
            trial = self.study.ask(self.distributions)
        if self.shared:
            trial.set_user_attr("ktune_worker", WORKER)
        self.asked[trial.number] = trial
        params = trial.params  # a copy each time it is read
        return trial.number, [int(params[name]) for name in self.names]

    def tell(self, number, state, value, config_key, status):
        trial = self.asked.pop(number)
        if config_key is not None:
            trial.set_user_attr("ktune_config", config_key)
        if status is not None:
            trial.set_user_attr("ktune_status", status)
        state = TrialState(state)
        values = [float(value)] if state == TrialState.COMPLETE else None
        if self.private and state in (TrialState.COMPLETE, TrialState.FAIL):
            # study.tell (_tell_with_warning) without the deep copy of the finished trial it
            # returns: ktune tells finite values of running trials only.
            storage = self.study._storage
            frozen = storage.get_trial(trial._trial_id)
            try:
                self.study.sampler.after_trial(self.study, frozen, state, values)
            finally:
                storage.set_trial_state_values(trial._trial_id, state, values)
        elif values is not None:
            self.study.tell(trial, values[0])
        else:
            self.study.tell(trial, state=state)

    def claim(self, number, config_key):
        self.asked[number].set_user_attr("ktune_config", config_key)

    def lock(self):
        if self.lock_ is not None:
            self.lock_.acquire()

    def unlock(self):
        # What this worker drew under the lock is written before another worker may draw.
        flush = getattr(getattr(self.study, "_storage", None), "flush", None)
        if flush is not None:
            flush()
        if self.lock_ is not None:
            self.lock_.release()

    def trials(self, first):
        out = []
        now = datetime.datetime.now()
        # Abandonment is judged only under the study's lock (_abandoned); read without it, a
        # running trial is reported running.
        judge = self.shared and self.lock_.depth > 0
        for t in self.study.get_trials(deepcopy=False):
            if t.number < first:
                continue
            state = int(t.state)
            # Another worker's trial whose process is gone: reported as ABANDONED (5), so its
            # configuration is free to measure again.
            if judge and t.state == TrialState.RUNNING and t.number not in self.asked:
                if _abandoned(t, now):
                    state = 5
            has = all(name in t.params for name in self.names)
            params = [int(t.params[name]) for name in self.names] if has else []
            value = t.value if t.state == TrialState.COMPLETE and t.value is not None else math.nan
            out.append((t.number, state, has, float(value), params,
                        t.user_attrs.get("ktune_config"), t.user_attrs.get("ktune_status")))
        out.sort()
        return out


def quiet():
    """Optuna's INFO lines and its experimental-feature warnings would clutter ktune's output."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    # scipy's Sobol' sequence warns when a batch is not a power of two.
    warnings.filterwarnings("ignore", message=".*balance properties of Sobol.*")
