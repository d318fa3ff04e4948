"""ktune installed with pip into a fresh virtual environment, as a Python user installs it, with
no package index: `pip wheel` of the source's python/ folder (the build backend packs BUILD_DIR,
already built), then `pip install` of that wheel. The environment's ktune program and Python
package must work on their own (a Kernel Tuner script replaying a cache file without a GPU, an
Optuna search through the program), and `pip uninstall` must leave the environment as it was.
Then `pip install` of the source root (its pyproject.toml) into the same environment.

    python3 pip_install.py SOURCE_DIR BUILD_DIR WORK_DIR
"""

import glob
import json
import os
import shutil
import subprocess
import sys
import unittest

SOURCE, BUILD, WORK = (os.path.abspath(p) for p in sys.argv[1:4])
VENV = os.path.join(WORK, "venv")
PYTHON = os.path.join(VENV, "bin", "python")
KTUNE = os.path.join(VENV, "bin", "ktune")


def outside_the_tree(path):
    path = os.path.realpath(path)
    return not any(path == top or path.startswith(top + os.sep)
                   for top in (os.path.realpath(SOURCE), os.path.realpath(BUILD)))


def env():
    """The environment a user's shell gives the venv: nothing pointing at the source or build
    tree. PYTHONPATH keeps what lies elsewhere (where a machine keeps NumPy and Optuna)."""
    e = {k: v for k, v in os.environ.items()
         if not k.startswith(("KTUNE_", "PYTHON", "PIP_"))}
    kept = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
            if p and outside_the_tree(p)]
    if kept:
        e["PYTHONPATH"] = os.pathsep.join(kept)
    e.update({"CUDA_VISIBLE_DEVICES": "", "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1",
              "KTUNE_CACHE_DIR": os.path.join(WORK, "compile-cache"),
              "PATH": os.path.join(VENV, "bin") + os.pathsep + os.environ.get("PATH", "")})
    return e


def run(*command, cwd=WORK):
    done = subprocess.run(command, cwd=cwd, env=env(), capture_output=True, text=True)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(command)}: exit {done.returncode}\n{done.stdout}\n"
                             f"{done.stderr}")
    return done.stdout


def files(root):
    """Every file and folder under root, relative."""
    out = set()
    for top, dirs, names in os.walk(root):
        for name in dirs + names:
            out.add(os.path.relpath(os.path.join(top, name), root))
    return out


def write_cache(path):
    """A Kernel Tuner cache of examples/python/vector_add.py's space; 512 is the fastest."""
    times = {128: 0.40, 256: 0.30, 512: 0.25, 1024: 0.35}
    cache = {str(bs): {"block_size_x": bs, "time": t, "times": [t] * 7, "compile_time": 10.0}
             for bs, t in times.items()}
    with open(path, "w") as f:
        json.dump({"version": "1.0", "device_name": "NVIDIA H100 80GB HBM3",
                   "kernel_name": "vector_add", "problem_size": 10000,
                   "tune_params_keys": ["block_size_x"],
                   "tune_params": {"block_size_x": list(times)}, "objective": "time",
                   "cache": cache}, f)


class PipInstall(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.before = files(VENV)

    def check_installed(self):
        self.assertTrue(os.access(KTUNE, os.X_OK), "no bin/ktune in the environment")
        self.assertIn("ktune", run(KTUNE, "--version"))
        where = run(PYTHON, "-c", "import ktune, ktune.interface as i; "
                    "print(ktune.__file__); print(i.ktune_executable())").split()
        self.assertTrue(where[0].startswith(VENV), where)
        self.assertEqual(os.path.realpath(where[1]), os.path.realpath(KTUNE))

    def test_a_wheel_installs_works_and_uninstalls_without_a_trace(self):
        dist = os.path.join(WORK, "dist")
        run(PYTHON, "-m", "pip", "wheel", "--no-deps", "--config-settings", f"build-dir={BUILD}",
            "-w", dist, os.path.join(SOURCE, "python"))
        wheels = glob.glob(os.path.join(dist, "ktune-*.whl"))
        self.assertEqual(len(wheels), 1, wheels)
        run(PYTHON, "-m", "pip", "install", wheels[0])
        self.check_installed()
        self.assertTrue(glob.glob(os.path.join(VENV, "lib*", "ktune", "libktune_optuna.so")))

        # A Kernel Tuner script, from a folder of its own, on the replay backend.
        script = os.path.join(WORK, "script")
        os.makedirs(script)
        write_cache(os.path.join(script, "cache.json"))
        out = run(PYTHON, os.path.join(SOURCE, "examples", "python", "vector_add.py"),
                  "cache.json", cwd=script)
        self.assertIn("4 configurations on NVIDIA H100 80GB HBM3; best block_size_x=512", out)
        # The program's Optuna module and its shipped recordings, from the environment.
        out = run(KTUNE, "tune", "--replay", os.path.join(SOURCE, "tests", "data", "replay",
                                                          "gemm_small.json"),
                  "--strategy", "optuna:tpe", "--budget-evals", "6", "--retime-top", "0",
                  "--db", os.path.join(script, "optuna.db"), "--json", cwd=script)
        self.assertEqual(json.loads(out)["strategy"], "optuna:tpe")
        # With no GPU, a built-in kernel replays the recording shipped in the environment.
        out = json.loads(run(KTUNE, "tune", "reduce", "-p", "n=2**28", "--budget-evals", "4",
                             "--retime-top", "0",
                             "--db", os.path.join(script, "reduce.db"), "--json", cwd=script))
        recording = os.path.realpath(out["recording"]["path"])
        self.assertTrue(recording.startswith(os.path.realpath(VENV)), recording)

        run(PYTHON, "-m", "pip", "uninstall", "-y", "ktune")
        self.assertEqual(sorted(files(VENV) - self.before), [])
        self.assertEqual(sorted(self.before - files(VENV)), [])

    def test_the_source_root_installs(self):
        run(PYTHON, "-m", "pip", "install", "--config-settings", f"build-dir={BUILD}",
            SOURCE)
        self.check_installed()
        run(PYTHON, "-m", "pip", "uninstall", "-y", "ktune")
        self.assertFalse(os.path.exists(KTUNE))


def venv_missing():
    """Why a virtual environment with pip cannot be made here (None: it can)."""
    probe = subprocess.run([sys.executable, "-c", "import ensurepip, venv"], capture_output=True,
                           text=True)
    if probe.returncode != 0:
        return f"{sys.executable} has no venv or ensurepip module (Debian: python3-venv)"
    return None


def make_venv():
    """The fresh environment, with the system's NumPy and Optuna as docs/python.md says; why it
    cannot serve ktune (None: it can)."""
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    run(sys.executable, "-m", "venv", "--system-site-packages", VENV)
    probe = subprocess.run([PYTHON, "-c", "import numpy"], env=env(), capture_output=True,
                           text=True)
    if probe.returncode != 0:
        return (f"NumPy of {sys.executable} is not visible in a --system-site-packages "
                "environment (a user site or a path of its own?)")
    return None


if __name__ == "__main__":
    reason = venv_missing() or make_venv()
    if reason:
        print("skipped:", reason)
        sys.exit(77)
    unittest.main(argv=sys.argv[:1] + sys.argv[4:])
