"""tune_kernel with Kernel Tuner 1.4's arguments, over ktune's engine.

The arguments become a ktune manifest (docs/plugins.md) in a temporary folder: the kernel source
rendered as Kernel Tuner does (its #defines), the tunable parameters and restrictions, the launch
geometry from problem_size, grid_div_x/y/z and the block size names, every array argument as a
file of raw bytes and every answer as the expected output. ktune then tunes it as `ktune tune`
does: compile processes, a separate GPU worker process (a kernel that crashes or hangs costs one
trial), verification, the SQLite database. The run's trials come back as Kernel Tuner's
(results, env).
"""

import inspect
import itertools
import json
import math
import os
import shutil
import sys
import tempfile
import time
import warnings

import numpy

from . import _ktune
from . import cache as kt_cache
from . import observers as observers_module
from ._paths import BUILD_EXECUTABLE, INSTALLED_EXECUTABLE

# Arguments of Kernel Tuner's tune_kernel that ktune does not support yet, with what to do.
UNSUPPORTED = {
    "texmem_args": "texture memory arguments are not supported",
    "compiler": "ktune compiles with NVRTC; the compiler argument is not supported",
    "parallel": "parallel (Ray) tuning is not supported",
    "python_kernel": "Python kernels are not supported",
    "log": "log files are not supported",
    "platform": "platforms are an OpenCL notion; ktune tunes CUDA only",
}

# Kernel Tuner's strategies and the ktune strategy each maps to (docs/strategies.md).
# ktune's effort levels (docs/effort.md), for tune_kernel's effort argument.
EFFORTS = ("quick", "default", "thorough")

STRATEGIES = {
    "brute_force": "brute_force",
    "random_sample": "random",
    "genetic_algorithm": "genetic_algorithm",
    "simulated_annealing": "annealing",
    "greedy_ils": "greedy_ils",
    "mls": "mls",
    "greedy_mls": "greedy_mls",
    "ordered_greedy_mls": "ordered_greedy_mls",
    "diff_evo": "diff_evo",
    "pso": "pso",
    "firefly_algorithm": "firefly_algorithm",
    "minimize": "minimize",
    "basinhopping": "basinhopping",
    "dual_annealing": "dual_annealing",
    # Bayesian optimisation (Kernel Tuner's own, and scikit-optimize's) runs ktune's.
    "bayes_opt": "bayes",
    "skopt": "bayes",
    # NSGA-II on the one objective, time: Optuna's sampler.
    "nsga2": "optuna:nsgaii",
}
# Kernel Tuner 1.4's strategies that ktune has no counterpart for, and why.
UNSUPPORTED_STRATEGIES = {
    "nsga3": "NSGA-III needs Optuna 3.2 or later (Debian 12 has 3.1); nsga2 runs",
    "pyatf_strategies": "pyATF's search techniques are not part of ktune",
    "hybrid_vndx": "the hybrid VNDX search is not part of ktune",
    "adaptive_tabu_greywolf": "the adaptive tabu grey wolf search is not part of ktune",
}

ELEMENT_TYPES = {
    numpy.dtype(numpy.int8): "int8",
    numpy.dtype(numpy.uint8): "uint8",
    numpy.dtype(numpy.int16): "int16",
    numpy.dtype(numpy.uint16): "uint16",
    numpy.dtype(numpy.int32): "int32",
    numpy.dtype(numpy.uint32): "uint32",
    numpy.dtype(numpy.int64): "int64",
    numpy.dtype(numpy.uint64): "uint64",
    numpy.dtype(numpy.float32): "float32",
    numpy.dtype(numpy.float64): "float64",
}

# GPU milliseconds each configuration runs back to back while NVML's energy counter is read,
# where an NVMLObserver asks for energy or power (ktune tune's --energy-ms default for energy).
ENERGY_MS = 300.0

# Kernel Tuner 1.4's objectives whose direction it knows (util.objective_default_map); any other
# needs objective_higher_is_better.
OBJECTIVE_DIRECTIONS = {
    "time": False, "energy": False, "fitness": True, "cost": False, "loss": False,
    "GFLOP/s": True, "TFLOP/s": True, "GB/s": True, "TB/s": True, "GFLOPS/W": True,
    "TFLOPS/W": True, "GFLOP/J": True, "TFLOP/J": True, "nvml_energy": False,
    "nvml_power": False,
}

# np.allclose's relative tolerance, with which Kernel Tuner checks an answer.
NUMPY_RTOL = 1e-5


class KtuneError(Exception):
    """An argument ktune cannot use, named in the message."""


INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
UINT64_MAX = 2**64 - 1


def _integer(name, value, low, high):
    """value as an int from low to high; a KtuneError naming the argument and its range (not the
    binding's anonymous TypeError) otherwise."""
    if isinstance(value, (bool, numpy.bool_)) or not isinstance(value, (int, numpy.integer)):
        raise KtuneError(f"ktune: {name}={value!r}: expected an integer from {low} to {high}")
    if not low <= int(value) <= high:
        raise KtuneError(f"ktune: {name}={int(value)}: expected an integer from {low} to {high}")
    return int(value)


def _number(name, value, low, inclusive=True):
    """value as a finite float of at least (or, not inclusive, above) low."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        x = math.nan
    if isinstance(value, (bool, str)) or not math.isfinite(x) or x < low or (
            not inclusive and x == low):
        bound = f"at least {low}" if inclusive else f"above {low}"
        raise KtuneError(f"ktune: {name}={value!r}: expected a finite number {bound}")
    return x


def _compiler_options(options):
    """compiler_options as a list of strings: a string alone would be taken apart into its
    characters, as a list."""
    if options is None:
        return []
    if isinstance(options, str):
        raise KtuneError(f"ktune: compiler_options={options!r}: expected a list of strings, "
                         f"such as [{options!r}]")
    out = list(options)
    for o in out:
        if not isinstance(o, str):
            raise KtuneError(f"ktune: compiler_options: {o!r} is not a string")
    return out


def ktune_executable():
    """The ktune program whose __worker and __compile the tuning runs."""
    env = os.environ.get("KTUNE_EXECUTABLE")
    if env:
        return env
    if BUILD_EXECUTABLE and os.path.exists(BUILD_EXECUTABLE):
        return BUILD_EXECUTABLE
    installed = os.path.normpath(os.path.join(os.path.dirname(__file__), INSTALLED_EXECUTABLE))
    if os.path.exists(installed):
        return installed
    raise KtuneError("ktune: the ktune executable was not found; set KTUNE_EXECUTABLE")


def default_db():
    """The database tune_kernel writes to by default: $KTUNE_DB, else ./ktune.db (as the CLI)."""
    return os.environ.get("KTUNE_DB") or "ktune.db"


def _reject_unsupported(lang, kwargs):
    if lang is not None and str(lang).upper() != "CUDA":
        raise KtuneError(f"ktune: lang={lang!r} is not supported; ktune tunes CUDA kernels only "
                         "(OpenCL, HIP, C and Fortran are not supported)")
    for name, value in kwargs.items():
        if name in UNSUPPORTED:
            if value is not None and value is not False:
                raise KtuneError(f"ktune: {name}: {UNSUPPORTED[name]}")
        else:
            raise KtuneError(f"ktune: tune_kernel() got an unknown argument '{name}'")


def _observed(observers):
    """The result keys Kernel Tuner's observers would add; an observer or observable ktune
    cannot serve is a KtuneError naming it. ktune's observers and Kernel Tuner's own are
    recognised by their class names."""
    if observers is None:
        return set()
    if not isinstance(observers, (list, tuple)):
        raise KtuneError("ktune: observers must be a list of observers")
    keys = set()
    for observer in observers:
        name = type(observer).__name__
        if name == "RegisterObserver":
            keys.add("num_regs")
        elif name == "NVMLObserver":
            keys |= _nvml_observables(observer)
        else:
            raise KtuneError(f"ktune: observers: {name} is not supported; ktune serves "
                             "RegisterObserver and NVMLObserver (ktune.observers) and records "
                             "time, samples and registers of every configuration")
    return keys


def _nvml_observables(observer):
    """The observables of an NVMLObserver (ktune's, or Kernel Tuner's, which keeps its power
    observables apart), each one ktune records; any other is a KtuneError naming it."""
    wanted = list(getattr(observer, "observables", []))
    power = getattr(observer, "continuous_observer", None)
    wanted += list(getattr(power, "observables", []) or [])
    for o in wanted:
        if o in observers_module.NVML_NOT_SERVED:
            raise KtuneError(f"ktune: NVMLObserver: '{o}' is not supported: "
                             f"{observers_module.NVML_NOT_SERVED[o]}; ktune records "
                             f"{', '.join(observers_module.NVML_SERVED)}")
        if o not in observers_module.NVML_SERVED:
            raise KtuneError(f"ktune: NVMLObserver: unknown observable {o!r}")
    return set(wanted)


def _source_text(kernel_source):
    """The kernel's text: a string of code, or the name of a file holding it."""
    if callable(kernel_source):
        raise KtuneError("ktune: kernel_source as a Python function (python_kernel) is not "
                         "supported")
    if isinstance(kernel_source, (list, tuple)):
        if len(kernel_source) != 1:
            raise KtuneError("ktune: kernel_source with several files is not supported")
        kernel_source = kernel_source[0]
    text = str(kernel_source)
    if "\n" not in text and os.path.isfile(text):
        with open(text) as f:
            return f.read(), os.path.basename(text)
    return text, None


def _values(name, values):
    out = []
    for v in values:
        if isinstance(v, (bool, numpy.bool_)):
            out.append(int(v))
        elif isinstance(v, (int, numpy.integer)):
            out.append(int(v))
        elif isinstance(v, (float, numpy.floating)):
            if not math.isfinite(float(v)):
                raise KtuneError(f"ktune: tune_params['{name}']: value {v!r} is not a finite "
                                 "number")
            out.append(float(v))
        elif isinstance(v, str):
            out.append(v)
        else:
            raise KtuneError(f"ktune: tune_params['{name}']: value {v!r} is not a number or "
                             "a string")
    if not out:
        raise KtuneError(f"ktune: tune_params['{name}'] has no values")
    return out


def _restrictions(restrictions, tune_params):
    """(strings, functions): strings pass as they are (ktune's expressions are Python's syntax);
    Python functions become predicates of a configuration dict, called as Kernel Tuner 1.4 calls
    them: a lone function with the dict of parameters, a function in a list with the values of
    every parameter in order (or, as a tuple (function, names), of those named)."""
    if restrictions is None:
        return [], []
    names = list(tune_params)
    if callable(restrictions):
        return [], [restrictions]
    if isinstance(restrictions, str):
        restrictions = [restrictions]
    restrictions = list(restrictions)
    if (len(restrictions) == 1 and callable(restrictions[0]) and len(names) > 1
            and _positional_count(restrictions[0]) == 1):
        return [], [restrictions[0]]
    strings, functions = [], []
    for r in restrictions:
        if isinstance(r, str):
            strings.append(r)
        elif isinstance(r, tuple) and len(r) in (2, 3) and callable(r[0]) and \
                isinstance(r[1], (list, tuple)):
            unknown = [n for n in r[1] if n not in tune_params]
            if unknown:
                raise KtuneError(f"ktune: restriction {r[0]!r} names parameters that are not "
                                 f"tuned: {', '.join(map(str, unknown))}")
            functions.append(_positional(r[0], list(r[1])))
        elif callable(r):
            functions.append(_positional(r, names))
        else:
            raise KtuneError(f"ktune: restriction {r!r} is neither a string nor a function")
    return strings, functions


def _positional_count(f):
    try:
        return len(inspect.signature(f).parameters)
    except (TypeError, ValueError):
        return -1


def _positional(f, names):
    def call(params):
        return f(*[params[n] for n in names])
    call.__name__ = getattr(f, "__name__", "restriction")
    return call


def _listed(tune_params, functions, derived, skip=frozenset()):
    """The configurations the Python restrictions let through, with the per-configuration values
    of `derived` ({hidden parameter: function}): (names, rows of literals, hidden parameters as
    [(name, values)]); None without either. Kernel Tuner evaluates them the same way, over the
    cartesian product; a division by zero in a restriction rejects the configuration."""
    if not functions and not derived and not skip:
        return None
    names = list(tune_params)
    total = 1
    for v in tune_params.values():
        total *= len(v)
    what = [f"{len(functions)} restriction(s)"] if functions else []
    what += sorted(n[len(DERIVED_PREFIX):] for n in derived)
    if what:
        warnings.warn(f"ktune: {', '.join(what)} given as Python functions are evaluated in "
                      f"Python for each of the {total} configurations of the cartesian product; "
                      "strings in ktune's expression language (docs/expressions.md) are much "
                      "faster", stacklevel=3)
    rows, seen = [], {name: set() for name in derived}
    for values in itertools.product(*tune_params.values()):
        params = dict(zip(names, values))
        try:
            ok = all(f(params) for f in functions)
        except ZeroDivisionError:
            ok = False
        if not ok or (skip and kt_cache.entry_key(params, tune_params) in skip):
            continue
        extra = []
        for name, f in derived.items():
            v = f(params)
            seen[name].add(v)
            extra.append(_literal(v))
        rows.append([_literal(v) for v in values] + extra)
    if not rows and not skip:
        raise KtuneError("ktune: no configuration satisfies the restrictions")
    hidden = [(name, sorted(seen[name])) for name in derived]
    return names + list(derived), rows, hidden


def _literal(v):
    """A parameter value as ktune's literal text (numbers as Python writes them, strings quoted)."""
    if isinstance(v, (bool, numpy.bool_)):
        return str(int(v))
    if isinstance(v, (int, numpy.integer)):
        return str(int(v))
    if isinstance(v, (float, numpy.floating)):
        return repr(float(v))
    return json.dumps(str(v))


# Values that Kernel Tuner computes per configuration with a Python function (problem_size, a
# grid divisor, smem_args' size) become hidden parameters: one value per configuration, pinned by
# the listed configurations (_listed), and named by the launch expressions.
DERIVED_PREFIX = "ktune_"


def _derived(derived, name, function, what):
    """Registers a per-configuration value computed by `function(params)`; returns its name."""
    def value(params):
        v = function(params)
        if isinstance(v, (bool, numpy.bool_)) or not isinstance(v, (int, numpy.integer)):
            raise KtuneError(f"ktune: {what} returned {v!r} for {params}; it must return an "
                             "int")
        return int(v)
    derived[DERIVED_PREFIX + name] = value
    return DERIVED_PREFIX + name


def _derived_text(derived, name, function, what):
    """Registers a per-configuration text computed by `function(params)` (Kernel Tuner's str of
    what it returns); returns its name."""
    def value(params):
        v = str(function(params))
        if "," in v or "=" in v or v != v.strip() or not v:
            raise KtuneError(f"ktune: {what} returned {v!r} for {params}; ktune keeps it as a "
                             "parameter value, which cannot be empty, hold ',' or '=', or start "
                             "or end with a space")
        return v
    derived[DERIVED_PREFIX + name] = value
    return DERIVED_PREFIX + name


def _user_defines(defines, derived):
    """Kernel Tuner's defines as [[name, value]]: a value is defined as it is, a string with each
    tunable parameter's name in it replaced by its value, a function of the parameters' dict
    called for each configuration (a hidden parameter); None without defines (Kernel Tuner then
    defines the grid, the block and every parameter)."""
    if defines is None:
        return None
    if not isinstance(defines, dict):
        raise KtuneError("ktune: defines must be a dict of macro name: value, string or function")
    out = []
    for name, v in defines.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise KtuneError(f"ktune: defines: name is not a valid identifier: {name!r}")
        if callable(v):
            out.append([name, _derived_text(derived, f"define_{name}", v, f"defines['{name}']")])
        else:
            out.append([name, str(v)])
    return out


def _problem(problem_size, derived):
    """problem_size as (problem parameters {name: int}, [expression per axis]); a function of the
    parameters (Kernel Tuner calls it with their dict; an int or a tuple) is evaluated for each
    configuration."""
    if callable(problem_size):
        exprs = []
        for axis, suffix in enumerate("xyz"):
            def size(params, axis=axis):
                s = problem_size(params)
                s = list(s) if isinstance(s, (list, tuple)) else [s]
                return s[axis] if axis < len(s) else 1
            exprs.append(_derived(derived, f"problem_size_{suffix}", size, "problem_size"))
        return {}, exprs
    scalar = isinstance(problem_size, (int, numpy.integer, str))
    sizes = [problem_size] if scalar else list(problem_size)
    if not 1 <= len(sizes) <= 3:
        raise KtuneError("ktune: problem_size has 1 to 3 dimensions")
    names = ["problem_size"] if scalar else ["problem_size_x", "problem_size_y", "problem_size_z"]
    params, exprs = {}, []
    for name, s in zip(names, sizes):
        if isinstance(s, str):
            exprs.append(f"({s})")
        elif isinstance(s, (int, numpy.integer)):
            params[name] = _integer(name, s, 0, INT64_MAX)
            exprs.append(name)
        else:
            raise KtuneError("ktune: problem_size should only contain strings or integers")
    while len(exprs) < 3:
        exprs.append("1")
    return params, exprs


def _divisor(div, default, tune_params, derived=None, axis="x"):
    """A grid divisor as an expression: Kernel Tuner's rules (None: the block dimension's name
    when it is tuned, else 1; a list: the product; a function of the parameters' dict: evaluated
    for each configuration)."""
    if div is None:
        return default if default in tune_params else "1"
    if isinstance(div, (int, numpy.integer)):
        return str(_integer(f"grid_div_{axis}", div, 1, INT64_MAX))
    if isinstance(div, str):
        return f"({div})"
    if callable(div):
        return _derived(derived, f"grid_div_{axis}", div, f"grid_div_{axis}")
    parts = [_divisor(d, "1", tune_params, derived, axis) for d in div]
    return " * ".join(parts) if parts else "1"


def _launch(problem_exprs, grid_divs, block_names, tune_params, derived):
    block = []
    for axis, name in enumerate(block_names):
        block.append(name if name in tune_params else ("256" if axis == 0 else "1"))
    grid = []
    for axis in range(3):
        d = _divisor(grid_divs[axis], block_names[axis], tune_params, derived, "xyz"[axis])
        grid.append(f"({problem_exprs[axis]} + {d} - 1) // ({d})")
    return grid, block


def _is_array(a):
    return isinstance(a, numpy.ndarray) and a.ndim > 0


def _device_array(a):
    """CuPy and PyTorch arrays, copied to the host (the GPU worker uploads them)."""
    if hasattr(a, "get") and type(a).__module__.startswith("cupy"):
        return a.get()
    if type(a).__module__.startswith("torch"):
        return a.detach().cpu().numpy()
    return a


def _element_type(a, what):
    dtype = getattr(a, "dtype", None)
    if dtype is None or numpy.dtype(dtype) not in ELEMENT_TYPES:
        raise KtuneError(f"ktune: {what}: {type(a).__name__} of type {dtype} is not supported "
                         "(NumPy arrays and scalars of int8..int64, uint8..uint64, float32, "
                         "float64)")
    return ELEMENT_TYPES[numpy.dtype(dtype)]


def _constant_buffers(cmem_args, folder):
    """cmem_args: each array fills the kernel's __constant__ variable of that name, as Kernel
    Tuner copies it (a manifest buffer of role constant, not a kernel argument)."""
    buffers = []
    for name, a in (cmem_args or {}).items():
        if not isinstance(name, str) or not name.isidentifier():
            raise KtuneError(f"ktune: cmem_args: {name!r} is not the name of a __constant__ "
                             "variable")
        a = numpy.atleast_1d(numpy.asarray(_device_array(a)))
        type_name = _element_type(a, f"cmem_args['{name}']")
        data = os.path.join(folder, f"cmem_{name}.bin")
        numpy.ascontiguousarray(a).tofile(data)
        buffers.append({"name": name, "type": type_name, "size": int(a.size),
                        "init": f"file({data})", "role": "constant"})
    return buffers


def _shared_memory(smem_args, derived):
    """smem_args={'size': N, 'expression' or a function of the parameters' dict}: the dynamic
    shared memory of every launch."""
    if not smem_args:
        return None
    unknown = sorted(set(smem_args) - {"size"})
    if unknown:
        raise KtuneError(f"ktune: smem_args: only 'size' is supported, not {', '.join(unknown)}")
    size = smem_args.get("size")
    if callable(size):
        return _derived(derived, "shared_mem", size, "smem_args['size']")
    if isinstance(size, (bool, numpy.bool_)):
        raise KtuneError(f"ktune: smem_args['size'] must be a number of bytes or an expression, "
                         f"not {size!r}")
    if isinstance(size, (int, numpy.integer)):
        if size < 0:
            raise KtuneError(f"ktune: smem_args['size'] is negative ({size})")
        return str(int(size))
    if isinstance(size, str) and size.strip():
        return size
    raise KtuneError(f"ktune: smem_args['size'] must be a number of bytes or an expression, not "
                     f"{size!r}")


def _arguments(arguments, answer, atol, folder, cmem_args, verify=None):
    """Buffers and arguments of the manifest; array data and answers go to files. With a verify
    function the answered arguments (every array, without an answer) are fetched after each
    configuration's first run for it instead: (buffers, args, checked, fetched), fetched as
    {buffer name: (argument index, dtype, shape)}."""
    if answer is not None and len(answer) != len(arguments):
        raise KtuneError(f"ktune: answer has {len(answer)} entries, arguments "
                         f"{len(arguments)}")
    buffers, args, checked, fetched = [], [], 0, {}
    for i, a in enumerate(arguments):
        a = _device_array(a)
        expected = None if answer is None else answer[i]
        type_name = _element_type(a, f"argument {i}")
        dtype = a.dtype
        if not _is_array(a):
            if expected is not None and verify is None:
                raise KtuneError(f"ktune: answer[{i}] is given for a scalar argument")
            value = a.item() if hasattr(a, "item") else a
            if isinstance(value, float) and not math.isfinite(value):
                raise KtuneError(f"ktune: argument {i} is {value!r}: a scalar argument must be a "
                                 "finite number")
            args.append({"value": repr(value), "type": type_name})
            continue
        name = f"arg{i}"
        data = os.path.join(folder, name + ".bin")
        numpy.ascontiguousarray(a).tofile(data)
        buf = {"name": name, "type": type_name, "size": int(a.size), "init": f"file({data})",
               "role": "input"}
        if verify is not None:
            # Kernel Tuner copies these arguments' original contents to the GPU before the run
            # it checks: an inout buffer, restored before every run, whose output the caller's
            # verify is given.
            if answer is None or expected is not None:
                buf["role"] = "inout"
                fetched[name] = (i, dtype, a.shape)
        elif expected is not None:
            exp = numpy.ascontiguousarray(numpy.asarray(_device_array(expected), dtype=dtype))
            if exp.size != a.size:
                raise KtuneError(f"ktune: answer[{i}] has {exp.size} elements, argument {i} "
                                 f"{a.size}")
            path = os.path.join(folder, name + ".expected.bin")
            exp.tofile(path)
            buf.update(role="inout", expected=f"file({path})", abs_tol=float(atol),
                       rel_tol=NUMPY_RTOL)
            checked += 1
        buffers.append(buf)
        args.append({"buffer": name})
    return buffers + _constant_buffers(cmem_args, folder), args, checked, fetched


def _verify_check(verify, answer, arguments, fetched, atol):
    """The check the engine calls with each configuration's fetched outputs ({name: bytes}):
    Kernel Tuner's verify(answer, gpu_result, atol=atol), gpu_result holding an array per
    fetched argument and None for the others. None when right, else why not."""
    def check(outputs):
        result = [None] * len(arguments)
        for name, (i, dtype, shape) in fetched.items():
            result[i] = numpy.frombuffer(outputs[name], dtype=dtype).reshape(shape).copy()
        if verify(answer, result, atol=atol):
            return None
        return "verify returned False: the output is wrong"
    return check


def _toml(value):
    """A TOML value from a Python one (JSON's strings, numbers and arrays are TOML's)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value)


def write_manifest(folder, kernel):
    """Writes the manifest and the kernel source; returns the manifest's path."""
    source = os.path.join(folder, kernel["source_name"])
    with open(source, "w") as f:
        f.write(kernel["source"])
    # Top-level keys come before the first table in TOML.
    lines = [f"restrictions = {_toml(kernel['restrictions'])}", "", "[kernel]"]
    for key in ("name", "entry", "compile_options", "defines", "block_names"):
        lines.append(f"{key} = {_toml(kernel[key])}")
    if kernel.get("user_defines") is not None:
        lines.append(f"kernel_tuner_defines = {_toml(kernel['user_defines'])}")
    lines.append(f"source = {_toml(kernel['source_name'])}")
    for name, values in kernel["params"]:
        lines += ["", "[[param]]", f"name = {_toml(name)}", f"values = {_toml(values)}"]
    for name, value in kernel["problem"].items():
        lines += ["", "[[problem]]", f"name = {_toml(name)}", f"default = {value}"]
    lines += ["", "[launch]", f"grid = {_toml(kernel['grid'])}",
              f"block = {_toml(kernel['block'])}"]
    if kernel.get("shared_mem"):
        lines.append(f"shared_mem = {_toml(kernel['shared_mem'])}")
    for b in kernel["buffers"]:
        lines += ["", "[[buffer]]"] + [f"{k} = {_toml(v)}" for k, v in b.items()]
    for a in kernel["args"]:
        lines += ["", "[[arg]]"] + [f"{k} = {_toml(v)}" for k, v in a.items()]
    if kernel["unchecked"]:
        lines += ["", "[reference]", "unchecked = true"]
    path = os.path.join(folder, "kernel.toml")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def _strategy(strategy, strategy_options, iterations):
    name = strategy or "brute_force"
    if name in UNSUPPORTED_STRATEGIES:
        raise KtuneError(f"ktune: strategy '{name}' is not supported: "
                         f"{UNSUPPORTED_STRATEGIES[name]}")
    if name not in STRATEGIES:
        raise KtuneError(f"ktune: strategy '{name}' is not supported; ktune has Kernel Tuner's "
                         f"{', '.join(sorted(STRATEGIES))}")
    options = dict(strategy_options or {})
    budget_evals = options.pop("max_fevals", None)
    budget_seconds = options.pop("time_limit", None)
    if budget_evals is not None:
        budget_evals = _integer("strategy_options['max_fevals']", budget_evals, 1, UINT64_MAX)
    if budget_seconds is not None:
        budget_seconds = _number("strategy_options['time_limit']", budget_seconds, 0,
                                 inclusive=False)
    # The rest go to ktune's strategy by name, which refuses one it does not know; Kernel
    # Tuner's spelling of the local searches' neighbourhood is ktune's.
    if "neighbor" in options:
        options["neighbour"] = options.pop("neighbor")
    options = {k: str(v) for k, v in options.items()}
    return STRATEGIES[name], options, budget_evals, budget_seconds


def _kernel_description(kernel_name, kernel_source, problem_size, arguments, tune_params,
                        grid_div, restrictions, answer, atol, block_size_names,
                        compiler_options, cmem_args, smem_args, folder, verify=None,
                        skip=frozenset(), defines=None):
    source, file_name = _source_text(kernel_source)
    names = list(block_size_names or [])
    block_names = names + ["block_size_x", "block_size_y", "block_size_z"][len(names):]
    derived = {}
    problem, exprs = _problem(problem_size, derived)
    grid, block = _launch(exprs, grid_div, block_names, tune_params, derived)
    shared_mem = _shared_memory(smem_args, derived)
    user_defines = _user_defines(defines, derived)
    buffers, args, checked, fetched = _arguments(arguments, answer, atol, folder, cmem_args,
                                                 verify)
    strings, functions = _restrictions(restrictions, tune_params)
    listed = _listed(tune_params, functions, derived, skip)
    params = [(k, _values(k, v)) for k, v in tune_params.items()]
    if listed is not None:
        params += listed[2]
    return {
        "name": kernel_name, "entry": kernel_name, "source": source,
        "source_name": file_name or kernel_name + ".cu",
        "compile_options": list(compiler_options or []), "defines": "kernel_tuner",
        "user_defines": user_defines,
        "block_names": block_names,
        "params": params,
        "restrictions": strings, "listed": listed and listed[:2], "problem": problem,
        "grid": grid, "block": block, "shared_mem": shared_mem,
        "buffers": buffers, "args": args, "unchecked": checked == 0, "fetched": fetched,
    }


def tune_kernel(kernel_name, kernel_source, problem_size, arguments, tune_params,
                grid_div_x=None, grid_div_y=None, grid_div_z=None, restrictions=None,
                answer=None, atol=1e-6, verify=None, verbose=False, lang=None, device=0,
                smem_args=None, cmem_args=None, compiler_options=None, iterations=7,
                block_size_names=None, quiet=False, strategy=None, strategy_options=None,
                cache=None, metrics=None, simulation_mode=None, objective=None,
                objective_higher_is_better=None, seed=None, db=None, effort=None,
                observers=None, defines=None, objectives=None, **unsupported):
    """Tunes a CUDA kernel as Kernel Tuner's tune_kernel does; returns (results, env).

    ktune's own arguments: db (the results database; default $KTUNE_DB or ./ktune.db);
    effort ("quick", "default" or "thorough": without a strategy, ktune's auto search with that
    effort level's budget and stagnation stop instead of brute force; docs/effort.md).
    simulation_mode replays the cache file instead of measuring (no GPU needed).
    """
    _reject_unsupported(lang, unsupported)
    observed = _observed(observers)
    iterations = _integer("iterations", iterations, 1, INT32_MAX)
    if seed is not None:
        seed = _integer("seed", seed, 0, UINT64_MAX)
    device = _integer("device", device, 0, INT32_MAX)
    atol = _number("atol", atol, 0)
    compiler_options = _compiler_options(compiler_options)
    if verify is not None and not callable(verify):
        raise KtuneError("ktune: verify must be a function verify(answer, gpu_result, atol=...)")
    if objectives is not None:
        objective, objective_higher_is_better = _single_objective(objectives)
    objective, higher = _objective(objective, objective_higher_is_better, metrics, observed)
    if simulation_mode and not cache:
        raise KtuneError("ktune: simulation_mode needs a cache file to replay")
    mapped, options, budget_evals, budget_seconds = _strategy(strategy, strategy_options, iterations)
    if effort is not None:
        if effort not in EFFORTS:
            raise KtuneError(f"ktune: effort '{effort}': expected {', '.join(EFFORTS)}")
        if strategy is None:
            mapped = "auto"
    tune_params = dict(tune_params)
    started = time.perf_counter()
    reused = {}
    if cache and os.path.exists(cache):
        header = kt_cache.check_header(cache, kernel_name, tune_params, problem_size)
        if not simulation_mode and mapped == "brute_force":
            reused = _reusable(cache, header, device)
    folder = tempfile.mkdtemp(prefix="ktune-")
    try:
        kernel = _kernel_description(kernel_name, kernel_source, problem_size, arguments,
                                     tune_params, (grid_div_x, grid_div_y, grid_div_z),
                                     restrictions, answer, atol, block_size_names,
                                     compiler_options, cmem_args, smem_args, folder, verify,
                                     frozenset(reused), defines)
        if kernel["listed"] is not None and not kernel["listed"][1]:
            return _cached_only(reused, header, tune_params, metrics, iterations,
                                compiler_options, problem_size, started, verbose, quiet,
                                (objective, higher))
        request = _ktune.TuneRequest()
        request.manifest = write_manifest(folder, kernel)
        request.kernel = kernel_name
        request.problem = kernel["problem"]
        request.db = db or default_db()
        request.ktune = ktune_executable()
        request.strategy = mapped
        request.strategy_options = options
        if budget_evals is not None:
            request.budget_evaluations = int(budget_evals)
        if budget_seconds is not None:
            request.budget_seconds = float(budget_seconds)
        request.samples = int(iterations)
        if effort is not None:
            request.effort = effort
        request.seed = int(seed) if seed is not None else 1
        request.device = int(device)
        if simulation_mode:
            request.replay = os.path.abspath(cache)
        request.objective = objective
        request.objective_higher_is_better = higher
        if observed & observers_module.NVML_ENERGY:
            request.energy_ms = ENERGY_MS
        value = None
        if objective == "nvml_energy":
            request.objective = "energy"  # ktune's own: joules per run, computed in the engine
        elif objective != "time":
            def value(trial):
                return _objective_value(trial, tune_params, metrics, objective, observed)
        if kernel["listed"] is not None:
            request.listed_names, request.listed_rows = kernel["listed"]
        check = None
        if kernel["fetched"]:
            request.fetch_outputs = list(kernel["fetched"])
            check = _verify_check(verify, answer, arguments, kernel["fetched"], atol)
        bar = progress_bar(quiet)
        try:
            summary = _ktune.tune(request, check, bar, value)
        finally:
            if bar:
                bar.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    results = kt_results(_ktune.trials(request.db, summary["run_id"]), tune_params, metrics,
                         observed)
    env = kt_env(summary, iterations, compiler_options, problem_size, time.perf_counter() - started)
    if reused:
        results = _with_metrics(list(reused.values()), metrics) + results
        env["ktune_notes"].append(f"{len(reused)} configurations from the cache file {cache}")
    _best(results, env, objective, higher)
    if cache:
        kt_cache.write(cache, kernel_name, tune_params, problem_size, env, results,
                       objective=objective)
    _report(results, env, tune_params, metrics, verbose, quiet)
    return results, env


def run_kernel(kernel_name, kernel_source, problem_size, arguments, params, grid_div_x=None,
               grid_div_y=None, grid_div_z=None, lang=None, device=0, smem_args=None,
               cmem_args=None, compiler_options=None, block_size_names=None, quiet=False,
               **unsupported):
    """Runs the kernel once with `params`, as Kernel Tuner's run_kernel does: returns a list with
    each array argument's contents after the run (restored to the given contents before it) and
    each scalar as given. The run goes through ktune's engine in a throwaway database: compiled
    by a compile process, run by the GPU worker (a fault costs the call, never Python)."""
    captured = {}

    def keep(answer, gpu_result, atol=None):
        captured["result"] = gpu_result
        return True

    folder = tempfile.mkdtemp(prefix="ktune-run-")
    try:
        results, _ = tune_kernel(kernel_name, kernel_source, problem_size, arguments,
                                 {name: [value] for name, value in params.items()},
                                 grid_div_x=grid_div_x, grid_div_y=grid_div_y,
                                 grid_div_z=grid_div_z, verify=keep, lang=lang, device=device,
                                 smem_args=smem_args, cmem_args=cmem_args,
                                 compiler_options=compiler_options, iterations=1,
                                 block_size_names=block_size_names, quiet=True,
                                 db=os.path.join(folder, "run_kernel.db"), **unsupported)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if not results:
        raise KtuneError(f"ktune: run_kernel: {kernel_name} with {params} is not a valid "
                         "configuration (a restriction or a limit of the device)")
    r = results[0]
    if r["ktune_status"] != "ok" or "result" not in captured:
        raise KtuneError(f"ktune: run_kernel: {kernel_name} with {params}: {r['ktune_status']}: "
                         f"{r.get('ktune_error', '')}")
    out = captured["result"]
    return [out[i] if out[i] is not None else a for i, a in enumerate(arguments)]


def _reusable(cache, header, device):
    """The cache's entries a brute-force call takes instead of measuring them again, as Kernel
    Tuner does: {key: entry}. A cache of another GPU is refused, as Kernel Tuner refuses it."""
    here = _ktune.device_name(int(device))
    there = header.get("device_name")
    if there and there != here:
        raise KtuneError(f"ktune: {cache}: cache of device '{there}', this is '{here}'; give "
                         "another cache file (or simulation_mode=True to replay it)")
    return {key: dict(entry) for key, entry in header["cache"].items()}


def _with_metrics(results, metrics):
    """Each metric of each result; a failed configuration's is its failure name, as its time."""
    for r in results:
        for name, fn in (metrics or {}).items():
            if isinstance(r["time"], str):
                r[name] = r["time"]
            else:
                r[name] = fn(r) if callable(fn) else _metric_expression(fn, r)
    return results


def _single_objective(objectives):
    """Kernel Tuner 1.4's objectives={name: higher_is_better} of one entry, as (name, higher):
    what ktune tunes for. Several entries (a Pareto search) are refused: ktune tunes for one
    objective and keeps, where energy is measured, the time-energy Pareto set of everything it
    measured (docs/energy.md)."""
    if not isinstance(objectives, dict) or not objectives:
        raise KtuneError("ktune: objectives should be a dict of (objective, higher_is_better) "
                         "pairs")
    if len(objectives) > 1:
        raise KtuneError(f"ktune: objectives with {len(objectives)} entries "
                         f"({', '.join(map(str, objectives))}): tuning for several objectives at "
                         "once is not supported; tune for one (objective=...) and, with "
                         "NVMLObserver(['nvml_energy']), choose among the stored time-energy "
                         "Pareto set by policy (docs/energy.md)")
    [(name, higher)] = objectives.items()
    return name, higher


def _objective(objective, higher_is_better, metrics, observed=frozenset()):
    """(name, higher is better) of Kernel Tuner's objective: time, or one of the metrics, whose
    direction Kernel Tuner knows for its usual names (GFLOP/s, GB/s ...)."""
    name = "time" if objective is None else objective
    if not isinstance(name, str):
        raise KtuneError(f"ktune: objective={objective!r}: expected the name of a metric or "
                         "'time'")
    if name != "time" and name not in (metrics or {}) and name not in observed:
        known = ", ".join(["time"] + [repr(m) for m in (metrics or {})])
        raise KtuneError(f"ktune: objective '{name}' is neither time nor one of the metrics "
                         f"({known}) nor an observed value; give a metric of that name")
    if higher_is_better is None:
        if name not in OBJECTIVE_DIRECTIONS:
            raise KtuneError(f"ktune: objective '{name}': give objective_higher_is_better "
                             "(True or False)")
        higher_is_better = OBJECTIVE_DIRECTIONS[name]
    if not isinstance(higher_is_better, (bool, numpy.bool_)):
        raise KtuneError(f"ktune: objective_higher_is_better={higher_is_better!r}: expected "
                         "True or False")
    if name == "time" and higher_is_better:
        raise KtuneError("ktune: objective 'time' is lower-is-better; "
                         "objective_higher_is_better=True is not supported for it")
    return name, bool(higher_is_better)


def _objective_value(trial, tune_params, metrics, objective, observed=frozenset()):
    """A trial's value of the objective: its Kernel Tuner result with the metrics, as results
    will hold it; None where it is not a number."""
    r = _with_metrics([_kt_result(trial, tune_params, observed)], metrics)[0]
    v = r.get(objective)
    if isinstance(v, (bool, numpy.bool_, str)) or v is None:
        return None
    return v


def _best(results, env, objective="time", higher_is_better=False):
    """env's best_config: the best configuration by the objective that ran right, if any (as
    Kernel Tuner's get_best_config: a value that is not a number never wins)."""
    def number(r):
        v = r.get(objective)
        return isinstance(v, (int, float, numpy.number)) and not isinstance(
            v, (bool, numpy.bool_)) and math.isfinite(float(v))
    ok = [r for r in results if not isinstance(r["time"], str) and number(r)]
    if ok:
        pick = max if higher_is_better else min
        env["best_config"] = pick(ok, key=lambda r: float(r[objective]))


def _cached_only(reused, header, tune_params, metrics, iterations, compiler_options,
                 problem_size, started, verbose, quiet, objective):
    """Every configuration is in the cache: Kernel Tuner's results from it, nothing measured."""
    results = _with_metrics(list(reused.values()), metrics)
    env = {"device_name": header.get("device_name", ""), "iterations": iterations,
           "compiler_options": list(compiler_options or []),
           "problem_size": problem_size if not callable(problem_size) else None,
           "simulation": False, "ktune_version": _ktune.version(), "ktune_run_id": None,
           "ktune_notes": ["every configuration came from the cache file; nothing was measured"],
           "total_time": (time.perf_counter() - started) * 1e3}
    _best(results, env, *objective)
    _report(results, env, tune_params, metrics, verbose, quiet)
    return results, env


def kt_results(trials, tune_params, metrics, observed=frozenset()):
    """A run's search trials as Kernel Tuner's results: one dict per configuration with the
    parameters, time (mean of the samples, ms), times, what the observers add (observed:
    num_regs), the metrics and ktune's own figures."""
    # Re-timing and warm-start trials are not Kernel Tuner results.
    results = [_kt_result(t, tune_params, observed) for t in trials if t["kind"] == 0]
    return _with_metrics(results, metrics)


def _kt_result(t, tune_params, observed=frozenset()):
    """One trial as Kernel Tuner's result, before the metrics."""
    config = json.loads(t["config_json"])
    r = {k: config[k] for k in tune_params}
    if t["status"] == "ok":
        r["time"] = t["time_mean_ms"]
        r["times"] = list(t["samples_ms"])
    else:
        r["time"] = kt_cache.error_name(t["status"])
        r["times"] = []
    r["compile_time"] = t["compile_ms"]
    r["verification_time"] = 0
    r["benchmark_time"] = t["eval_ms"]
    r["strategy_time"] = 0
    r["framework_time"] = 0
    r["timestamp"] = t["created_at"]
    if "num_regs" in observed:
        r["num_regs"] = t["registers"] if t["registers"] >= 0 else None
    for key, field in observers_module.NVML_SERVED.items():
        if key in observed:
            v = t[field]
            r[key] = v if v is not None and v == v and v >= 0 else None  # NaN: not read
    r["ktune_status"] = t["status"]
    r["ktune_median_time"] = t["time_ms"] if t["status"] == "ok" else None
    if t["status"] != "ok":
        r["ktune_error"] = t["error"]
    return r


def _metric_expression(text, r):
    """A metric given as a string, as Kernel Tuner evaluates one: a Python expression over the
    result's parameters, its time and the metrics before it, by name."""
    if not isinstance(text, str):
        raise KtuneError(f"ktune: metric {text!r}: a metric is a function of the result dict or "
                         "a string expression")
    names = {k: v for k, v in r.items() if isinstance(k, str) and k.isidentifier()}
    try:
        return eval(text, {"__builtins__": __builtins__}, names)  # noqa: S307 (the user's own)
    except Exception as e:
        raise KtuneError(f"ktune: metric {text!r}: {type(e).__name__}: {e}") from None


def kt_env(summary, iterations, compiler_options, problem_size, wall_s):
    """Kernel Tuner's env: the device, the versions and the run, plus ktune's run id."""
    d = summary["device"]
    return {
        "device_name": d["name"],
        "compute_capability": f"{d['cc_major']}{d['cc_minor']}",
        "cuda_version": d["driver_version"],
        "iterations": iterations,
        "compiler_options": list(compiler_options or []),
        "problem_size": problem_size if not callable(problem_size) else None,
        "simulation": bool(summary["replayed"]),
        "ktune_version": _ktune.version(),
        "ktune_run_id": summary["run_id"],
        "ktune_strategy": summary["strategy"],
        "ktune_status": summary["status"],
        "ktune_notes": list(summary["notes"]),
        "total_compile_time": summary["compile_s"] * 1e3,
        "total_benchmark_time": summary["backend_s"] * 1e3,
        "total_time": wall_s * 1e3,
    }


class ProgressBar:
    """tune_kernel's progress: a bar redrawn in place on a stream, at most ten times a second."""

    WIDTH = 30

    def __init__(self, stream):
        self.stream = stream
        self.last = None
        self.drawn = 0

    def __call__(self, done, total, best_ms, phase):
        now = time.monotonic()
        if self.last is not None and now - self.last < 0.1 and done < total:
            return
        self.last = now
        filled = min(self.WIDTH, self.WIDTH * done // total) if total else 0
        text = f"[{'#' * filled}{'.' * (self.WIDTH - filled)}] {done}/{total}"
        if best_ms is not None:
            text += f", best {best_ms:.4g} ms"
        if phase:
            text += f", {phase}"
        self.stream.write("\r" + text.ljust(self.drawn))
        self.stream.flush()
        self.drawn = len(text)

    def close(self):
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()


def progress_bar(quiet, stream=None):
    """A ProgressBar where someone watches the run (a terminal, or Jupyter, whose output
    redraws a carriage return), else None: quiet, a pipe, a file, a batch job."""
    stream = stream or sys.stderr
    if quiet:
        return None
    watched = "ipykernel" in sys.modules
    try:
        watched = watched or stream.isatty()
    except (AttributeError, ValueError):
        pass
    return ProgressBar(stream) if watched else None


def _report(results, env, tune_params, metrics, verbose, quiet):
    keys = list(tune_params) + ["time"] + list(metrics or {})
    line = lambda r: ", ".join(f"{k}={r[k]}" for k in keys if k in r)  # noqa: E731
    if verbose and not quiet:
        for r in results:
            print(line(r))
    if quiet:
        return
    if "best_config" in env:
        print(f"best performing configuration:\n{line(env['best_config'])}")
    else:
        print("no results to report")


def best(kernel, problem, db=None, device=None, arch=None, **options):
    """The stored best of a kernel for a problem ({"problem_size": n} or the axes) as the
    run-time client answers it, or None; see Client.best."""
    return Client(db, device=device, arch=arch).best(kernel, problem, **options)


class Client:
    """ktune's run-time client (docs/client.md) from Python: read-only look-ups of the best
    configuration per device and problem, with its measurement and provenance."""

    def __init__(self, db=None, device=None, arch=None):
        if device and not arch:
            raise KtuneError("ktune: Client(device=...) needs arch= too (e.g. 'sm_90')")
        self._client = _ktune.Client(db or default_db(), device or "", arch or "")

    def best(self, kernel, problem, other_devices=True, nearest_problem=True, policy="fastest"):
        """The answer as a dict, or None (last_message says why). policy chooses among the
        problem's time-energy Pareto set (docs/energy.md): "fastest", "least-energy" or
        "least-energy-within=5%"."""
        if isinstance(problem, (int, numpy.integer)):
            problem = {"problem_size": int(problem)}
        elif isinstance(problem, (tuple, list)):
            problem = dict(zip(["problem_size_x", "problem_size_y", "problem_size_z"],
                               (int(p) for p in problem)))
        if not isinstance(policy, str):
            raise KtuneError(f"ktune: policy={policy!r}: expected fastest, least-energy or "
                             "least-energy-within=PCT%")
        return self._client.best(kernel, dict(problem), other_devices, nearest_problem, policy)

    @property
    def last_message(self):
        """Why the last best() found nothing."""
        return self._client.last_message

    def device(self):
        return self._client.device()
