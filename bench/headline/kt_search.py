#!/usr/bin/env python3
"""Kernel Tuner 1.4's side of the headline figure (bench/headline/README.md): on one space of
Kernel Tuner's reduce.cu, a brute force, then each search strategy once per seed, every
evaluation's finish time recorded, each search stopped as soon as it has evaluated a
configuration whose brute-force time is within the target of the brute-force optimum.

    PYTHONPATH=PEER/site CUDA_CACHE_DISABLE=1 kt_search.py --peer PEER --space kt270 \
        --out kt-kt270.json --launch EPOCH_S --deadline EPOCH_S [options]

One process per space. Its start (Python, the imports, the input data, the CUDA context:
from --launch, the caller's clock just before it started this process, to the brute force's
call) is measured once and written as `start_s`; each strategy's own imports (SciPy,
scikit-learn, its module) are timed once before the searches. Every search run's times are
seconds since its own `tune_kernel` call, and its `start_s` is the process's plus its
strategy's imports: the start it would have paid in a process of its own, which the summary
adds. Each run has a fresh cache file (nothing is answered from
an earlier run) and the driver's JIT cache is off (CUDA_CACHE_DISABLE=1, set by the caller),
so a search compiles everything it evaluates as the brute force did.

--simulate CACHE replays a Kernel Tuner cache file of the space instead of the GPU (Kernel
Tuner's simulation mode; for testing this script on a machine without one).
"""
import argparse
import gc
import json
import os
import random
import sys
import tempfile
import time
import traceback

# Kernel Tuner's reduce.cu (PEER/reduce.cu): block_size_x, items, variant and
# loop_unroll_factor_load. kt270 is the peer folder's tune_reduce.py space; wide adds 32 and
# 64 items per thread and an unroll of 8 (6 x 7 x 3 x 4 = 504 configurations).
SPACES = {
    "kt270": {"block_size_x": [32, 64, 128, 256, 512, 1024], "items": [1, 2, 4, 8, 16],
              "variant": [0, 1, 2], "loop_unroll_factor_load": [1, 2, 4]},
    "wide": {"block_size_x": [32, 64, 128, 256, 512, 1024], "items": [1, 2, 4, 8, 16, 32, 64],
             "variant": [0, 1, 2], "loop_unroll_factor_load": [1, 2, 4, 8]},
}
N = 2**25
# What each strategy imports beyond Kernel Tuner's own dependencies; a strategy whose imports
# fail on this host is reported as "could not run" with the error, the others still run.
NEEDS = {
    "dual_annealing": ["scipy.optimize"],
    "bayes_opt": ["scipy.stats", "scipy.stats.qmc", "sklearn.gaussian_process"],
}


class TargetReached(Exception):
    """Raised from the evaluation hook: the run has evaluated a configuration of the target."""


def import_strategy(strategy):
    """Imports `strategy` and what it needs: (the import error that keeps it from running
    here or None, the seconds the imports took). A process of its own would pay those seconds
    in its first call; here they are paid once, before the runs, and added to each run's start."""
    import importlib
    try:
        from kernel_tuner.interface import _STRATEGY_IMPORTS as paths
    except ImportError:
        paths = {}
    t = time.time()
    for module in NEEDS.get(strategy, []) + [paths.get(strategy, f"kernel_tuner.strategies.{strategy}")]:
        try:
            importlib.import_module(module)
        except Exception as e:  # ImportError, or a broken install raising something else
            return f"{type(e).__name__}: {e}", time.time() - t
    return None, time.time() - t


class Recorder:
    """Every new evaluation of the current run: (seconds since its call, key, time or None).

    Kernel Tuner's runners call util.print_config_output once for each configuration they
    evaluate afresh (not for one answered from the run's cache), after its compile, verification
    and timing: the sequential runner just before it appends the result to the cache file, the
    simulation runner on the first visit. That call is the hook.
    """

    def __init__(self):
        self.t_call = None
        self.keys = None  # the tunable parameters, in order
        self.evals = []
        self.target = None  # keys whose brute-force time is within the target, or None

    def start(self, keys, target):
        self.keys, self.target, self.evals = list(keys), target, []
        self.t_call = time.time()

    def record(self, params):
        t = time.time() - self.t_call
        key = ",".join(str(params[k]) for k in self.keys)
        value = params.get("time")
        ok = isinstance(value, (int, float)) and "__error__" not in params
        self.evals.append([round(t, 4), key, float(value) if ok else None])
        if self.target is not None and key in self.target:
            raise TargetReached(key)


def install_hook(recorder):
    import kernel_tuner.runners.sequential as sequential
    import kernel_tuner.util as util
    original = util.print_config_output

    def hooked(tune_params, params, *args, **kwargs):
        original(tune_params, params, *args, **kwargs)
        recorder.record(params)

    sequential.print_config_output = hooked
    util.print_config_output = hooked


def write(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peer", required=True, help="the Kernel Tuner folder (reduce.cu)")
    ap.add_argument("--space", required=True, choices=sorted(SPACES))
    ap.add_argument("--out", required=True, help="the JSON written (again after every run)")
    ap.add_argument("--launch", type=float, default=None,
                    help="time.time() of the caller just before it started this process")
    ap.add_argument("--deadline", type=float, default=None,
                    help="time.time() after which no run starts and no run's limit reaches")
    ap.add_argument("--strategies", default="genetic_algorithm,dual_annealing,greedy_ils,bayes_opt,random_sample")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=7, help="timed runs per configuration")
    ap.add_argument("--limit", type=float, default=15.0, help="seconds of one search run at most")
    ap.add_argument("--within", type=float, default=0.02, help="the target: within this fraction of the optimum")
    ap.add_argument("--simulate", default=None, help="a Kernel Tuner cache file to replay (no GPU)")
    a = ap.parse_args()
    launch = a.launch if a.launch is not None else time.time()

    t_imports = time.time()
    import numpy as np
    import kernel_tuner
    from kernel_tuner import tune_kernel
    t_imports = time.time() - t_imports

    tune_params = SPACES[a.space]
    with open(os.path.join(a.peer, "reduce.cu")) as f:
        kernel_string = f.read()
    rng = np.random.default_rng(20261122)
    data = rng.integers(0, 8, N, dtype=np.int32)
    out = np.zeros(1, np.int32)
    expected = int(data.astype(np.int64).sum())

    def exact(answer, result_host, atol=None):
        return int(result_host[1][0]) == int(answer[1][0])

    # The CUDA context, as a process of its own would make it: Kernel Tuner retains the
    # device's primary context, which stays for the later calls of this process.
    cuda_init_s, cuda_error = None, None
    if not a.simulate:
        t = time.time()
        try:
            try:
                from cuda.bindings import driver
            except ImportError:
                from cuda import cuda as driver
            driver.cuInit(0)
            _, device = driver.cuDeviceGet(0)
            driver.cuDevicePrimaryCtxRetain(device)
        except Exception as e:
            cuda_error = f"{type(e).__name__}: {e}"
        cuda_init_s = round(time.time() - t, 4)

    recorder = Recorder()
    install_hook(recorder)
    workdir = tempfile.mkdtemp(prefix=f"kt-headline-{a.space}-")
    runs = 0

    def tune(strategy, options, target):
        """One tune_kernel call with a fresh cache file (or the simulated one)."""
        nonlocal runs
        runs += 1
        cache = a.simulate or os.path.join(workdir, f"cache-{runs}.json")
        recorder.start(tune_params, target)
        return tune_kernel("reduce_sum", kernel_string, N, [data, out, np.int32(N)], tune_params,
                           grid_div_x=["block_size_x", "items"],
                           answer=[None, np.array([expected], np.int32), None], verify=exact,
                           lang="CUDA", iterations=a.iterations, cache=cache, quiet=True,
                           strategy=strategy, strategy_options=options,
                           simulation_mode=bool(a.simulate))

    doc = {"tool": "kernel_tuner", "version": kernel_tuner.__version__, "space": a.space,
           "tune_params": tune_params, "iterations": a.iterations, "within": a.within,
           "limit_s": a.limit, "simulated": bool(a.simulate), "imports_s": round(t_imports, 3),
           "cuda_init_s": cuda_init_s, "cuda_error": cuda_error}
    doc["start_s"] = round(time.time() - launch, 4)

    # The brute force: every configuration at the same iterations, the table the runs are
    # judged against.
    t0 = time.time()
    try:
        results, env = tune("brute_force", None, None)
    except Exception as e:
        doc["brute"] = {"status": "failed", "error": f"{type(e).__name__}: {e}",
                        "traceback": traceback.format_exc()[-2000:]}
        write(a.out, doc)
        return 1
    table = {key: value for _, key, value in recorder.evals}
    valid = [v for v in table.values() if v is not None]
    optimum = min(valid) if valid else None
    doc["device"] = env.get("device_name")
    doc["brute"] = {"status": "ok", "wall_s": round(time.time() - t0, 3), "configs": len(table),
                    "valid": len(valid), "optimum_ms": optimum, "table": table}
    del results
    write(a.out, doc)
    if optimum is None:
        return 1
    target = {k for k, v in table.items() if v is not None and v <= (1 + a.within) * optimum}
    size = len(table)

    strategies = [s for s in a.strategies.split(",") if s]
    doc["runs"] = []
    cannot, imports = {}, {}
    for s in strategies:
        cannot[s], imports[s] = import_strategy(s)
    doc["strategy_imports_s"] = {s: round(v, 4) for s, v in imports.items()}
    for s in strategies:
        if cannot[s]:
            doc["runs"].append({"strategy": s, "status": "could not run", "error": cannot[s]})
    # Seed by seed, every strategy once per seed. Each run's time limit is --limit, or, where
    # the time left would not give every run still to come that much, an equal share of it:
    # every seed runs, and what an early run leaves unused goes to the later ones.
    order = [(seed, s) for seed in range(1, a.seeds + 1) for s in strategies]
    for i, (seed, s) in enumerate(order):
        if cannot[s]:
            continue
        run = {"strategy": s, "seed": seed, "start_s": round(doc["start_s"] + imports[s], 4)}
        doc["runs"].append(run)
        limit = a.limit
        if a.deadline is not None:
            left = sum(1 for _, x in order[i:] if not cannot[x])
            limit = min(limit, (a.deadline - time.time()) / left)
        if limit < 1.0:
            run["status"] = "skipped"
            run["error"] = "out of time: the step's time was spent before this run"
            continue
        run["limit_s"] = round(limit, 3)
        # Kernel Tuner's strategies draw from numpy's and Python's generators.
        np.random.seed(seed)
        random.seed(seed)
        options = {"time_limit": limit, "max_fevals": size}
        try:
            try:
                tune(s, options, target)
                run["status"] = "not reached"
            except TargetReached:
                run["status"] = "reached"
        except ImportError as e:
            # A dependency the check above missed: this strategy's later seeds are not tried.
            run["status"] = "could not run"
            run["error"] = f"ImportError: {e}"
            cannot[s] = run["error"]
        except Exception as e:
            run["status"] = "failed"
            run["error"] = f"{type(e).__name__}: {e}"
            run["traceback"] = traceback.format_exc()[-2000:]
        run["end_s"] = round(time.time() - recorder.t_call, 4)
        run["evals"] = recorder.evals
        recorder.evals = []
        gc.collect()  # the stopped run's device memory goes before the next allocates
        write(a.out, doc)
    write(a.out, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
