"""Kernel Tuner's cache files (cache=): the header that says what was tuned, and one entry per
configuration keyed by its values joined with ','. tune_kernel refuses a cache of another
kernel, space or problem (as Kernel Tuner does), replays one in simulation_mode, and writes every
configuration of the call into it."""

import json
import os

# ktune's statuses as the failure names Kernel Tuner writes in place of a time.
_ERRORS = {
    "invalid": "InvalidConfig",
    "compile_failed": "CompilationFailedConfig",
    "resources_exceeded": "RuntimeFailedConfig",
    "launch_failed": "RuntimeFailedConfig",
    "wrong_result": "RuntimeFailedConfig",
    "timeout": "RuntimeFailedConfig",
    "crashed": "RuntimeFailedConfig",
}


def error_name(status):
    """Kernel Tuner's name for a failed configuration of this ktune status."""
    return _ERRORS.get(status, "RuntimeFailedConfig")


def _problem_json(problem_size):
    if isinstance(problem_size, (list, tuple)):
        return [p if isinstance(p, str) else int(p) for p in problem_size]
    return problem_size if isinstance(problem_size, str) else int(problem_size)


def read(path):
    """The cache as a dict; a file whose last entry was cut short (a killed run) is closed as
    Kernel Tuner does when it reads one."""
    with open(path) as f:
        text = f.read().rstrip()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    for tail in ("}}", "}"):
        try:
            return json.loads(text.rstrip(",") + tail)
        except json.JSONDecodeError:
            continue
    raise ValueError(f"ktune: {path}: not a Kernel Tuner cache file (unreadable JSON)")


def check_header(path, kernel_name, tune_params, problem_size):
    """Raises ValueError naming what differs when the cache is of another tuning problem."""
    c = read(path)
    for key in ("kernel_name", "tune_params_keys", "cache"):
        if key not in c:
            raise ValueError(f"ktune: {path}: not a Kernel Tuner cache file (no '{key}')")
    if c["kernel_name"] != kernel_name:
        raise ValueError(f"ktune: {path}: cache of kernel '{c['kernel_name']}', not "
                         f"'{kernel_name}'")
    if list(c["tune_params_keys"]) != list(tune_params):
        raise ValueError(f"ktune: {path}: cache of parameters {c['tune_params_keys']}, not "
                         f"{list(tune_params)}")
    if "problem_size" in c and c["problem_size"] != _problem_json(problem_size):
        raise ValueError(f"ktune: {path}: cache of problem_size {c['problem_size']}, not "
                         f"{_problem_json(problem_size)}")
    return c


def entry_key(result, tune_params):
    return ",".join(str(result[k]) for k in tune_params)


def write(path, kernel_name, tune_params, problem_size, env, results, objective="time"):
    """Writes (or extends) the cache with the call's results; entries already there for other
    configurations are kept, and the configurations of this call replace theirs."""
    old = read(path) if os.path.exists(path) else {}
    cache = dict(old.get("cache", {}))
    for r in results:
        # ktune_status and ktune_error keep ktune's exact failure, as ktune's own cache export
        # does; Kernel Tuner ignores them.
        entry = {k: v for k, v in r.items() if k != "ktune_median_time"}
        cache[entry_key(r, tune_params)] = entry
    out = {
        "version": "1.0",
        "device_name": env.get("device_name", old.get("device_name", "")),
        "kernel_name": kernel_name,
        "problem_size": _problem_json(problem_size),
        "tune_params_keys": list(tune_params),
        "tune_params": {k: list(v) for k, v in tune_params.items()},
        "objective": objective,
        "cache": cache,
    }
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f, default=_plain)
    os.replace(tmp, path)


def _plain(value):
    """NumPy scalars as Python numbers."""
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")
