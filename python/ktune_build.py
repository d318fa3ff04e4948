"""The build backend of `pip install ./python` (and of `pip install .` from the source root):
PEP 517's hooks over ktune's CMake build, with nothing to fetch.

build_wheel configures and builds ktune with CMake, installs it into a staging prefix, and packs
that into a wheel: the Python package at the wheel's root, the `ktune` executable as a script
(pip puts it in the environment's bin/), and lib/ktune (libktune_optuna.so, and the recordings
and replay jobs that cmake --install puts in share/ktune) as data, which pip installs under the
environment's prefix, so every path the installed program derives from its own place (bin/
beside lib/ktune) holds. The C++ headers, static libraries and CMake package are left out: C++
programs link an installed prefix (`cmake --install`, docs/library.md). The build dependencies are
the Debian packages of scripts/install-deps.sh, found by CMake, never downloaded: the
`[build-system]` of pyproject.toml requires nothing.

Config settings (`pip install -C KEY=VALUE ./python`):
  build-dir=PATH   the CMake build folder (default: build-python in the source root); an
                   already configured one is built as it is configured, so a development build
                   (`scripts/build.sh`'s build/) can be packed without building it again
  jobs=N           parallel build jobs (default: the machine's cores)
"""

import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = "ktune"
SUMMARY = "A CUDA kernel autotuner: NVRTC, Optuna and native searches, results in SQLite"


class BuildError(Exception):
    pass


def _version():
    with open(os.path.join(SOURCE, "CMakeLists.txt"), encoding="utf-8") as f:
        match = re.search(r"project\(ktune VERSION ([0-9.]+)", f.read())
    if not match:
        raise BuildError(f"no project(ktune VERSION ...) in {SOURCE}/CMakeLists.txt")
    return match.group(1)


def _tag():
    interpreter = f"cp{sys.version_info.major}{sys.version_info.minor}"
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"{interpreter}-{interpreter}-{platform}"


def _metadata():
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {_version()}\nSummary: {SUMMARY}\n"
            f"Requires-Python: =={sys.version_info.major}.{sys.version_info.minor}.*\n\n"
            "ktune tunes CUDA kernels (templated CUDA text compiled with NVRTC) and serves\n"
            "the best configuration per GPU and problem from SQLite. This package holds the\n"
            "`ktune` program and the Python package (Kernel Tuner's tune_kernel over ktune).\n"
            "NumPy and Optuna are the system's (a virtual\n"
            "environment needs --system-site-packages for them).\n")


def _wheel_file():
    return ("Wheel-Version: 1.0\nGenerator: ktune_build\nRoot-Is-Purelib: false\n"
            f"Tag: {_tag()}\n")


def _dist_info():
    return f"{NAME}-{_version()}.dist-info"


def _run(command, what):
    print("ktune_build: " + " ".join(command), flush=True)
    try:
        done = subprocess.run(command, check=False)
    except FileNotFoundError:
        raise BuildError(
            f"{what}: {command[0]} is not installed (scripts/install-deps.sh)") from None
    if done.returncode != 0:
        raise BuildError(f"{what} failed (exit {done.returncode}): {' '.join(command)}")


def _cache_value(build_dir, name):
    with open(os.path.join(build_dir, "CMakeCache.txt"), encoding="utf-8") as f:
        for line in f:
            if line.startswith(name + ":"):
                return line.split("=", 1)[1].strip()
    return None


def _build(settings):
    """Configures (where not configured yet) and builds; returns the build folder."""
    build_dir = os.path.abspath(settings.get("build-dir") or os.path.join(SOURCE, "build-python"))
    jobs = str(settings.get("jobs") or os.cpu_count() or 1)
    if not jobs.isdigit() or int(jobs) < 1:
        raise BuildError(f"config setting jobs={jobs}: expected a positive integer")
    if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
        # The interpreter the package is for (a virtual environment's python is the system's).
        python = os.path.realpath(sys.executable)
        command = ["cmake", "-S", SOURCE, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                   "-DKTUNE_BUILD_TESTS=OFF", "-DKTUNE_BUILD_BENCH=OFF",
                   "-DKTUNE_BUILD_PYTHON=ON", f"-DPython3_EXECUTABLE={python}"]
        if shutil.which("ninja"):
            command[1:1] = ["-G", "Ninja"]
        _run(command, "configuring ktune")
    elif _cache_value(build_dir, "CMAKE_HOME_DIRECTORY") != SOURCE:
        raise BuildError(f"config setting build-dir={build_dir}: a build of another source tree "
                         f"({_cache_value(build_dir, 'CMAKE_HOME_DIRECTORY')})")
    _run(["cmake", "--build", build_dir, "-j", jobs], "building ktune")
    if not os.path.exists(os.path.join(build_dir, "python", "ktune")):
        raise BuildError(f"{build_dir} has no Python package: it was configured with "
                         "KTUNE_BUILD_PYTHON=OFF or without pybind11 and python3-dev")
    return build_dir


def _executable_relative_path():
    """From the installed package's folder to the installed ktune program: platlib/ktune to
    scripts/ktune, alike in every POSIX scheme (a virtual environment, --user, system-wide)."""
    paths = sysconfig.get_paths("posix_prefix", vars={"base": "/p", "platbase": "/p"})
    return os.path.relpath(os.path.join(paths["scripts"], "ktune"),
                           os.path.join(paths["platlib"], "ktune"))


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def _shipped(parts):
    """Whether an installed file other than the package and the program goes into the wheel:
    lib/ktune (or LIBDIR/ktune) and share/ktune, not the C++ headers, libraries or CMake files."""
    return parts[0] in ("lib", "share") and "ktune" in parts[1:-1] and "cmake" not in parts


def _wheel_place(rel, libdir):
    """Where an installed data file goes in the wheel's prefix: share/ktune/X as LIBDIR/ktune/X,
    beside the Optuna module, since pip's uninstall removes a folder whole only where it holds a
    file of its own (an emptied share/ would be left in a virtual environment); the program
    looks in both places (ktune/replay.h)."""
    parts = rel.split(os.sep)
    if parts[0] == "share":
        return os.path.join(libdir, *parts[1:])
    return rel


def _members(staging, python_dir, libdir):
    """(arcname, path) of every installed file: the package, the scripts, the data."""
    data = f"{NAME}-{_version()}.data"
    members = []
    package = os.path.join(staging, python_dir, "ktune")
    for top, dirs, files in os.walk(staging):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(top, name)
            rel = os.path.relpath(path, staging)
            if path.startswith(package + os.sep):
                if "__pycache__" in rel or name == "_paths.py":
                    continue
                members.append((os.path.relpath(path, os.path.dirname(package)), path))
            elif rel.startswith("bin" + os.sep):
                members.append((f"{data}/scripts/{rel[4:]}", path))
            elif _shipped(rel.split(os.sep)):
                members.append((f"{data}/data/{_wheel_place(rel, libdir)}", path))
    return members


def _pack(staging, python_dir, libdir, wheel_directory):
    wheel_name = f"{NAME}-{_version()}-{_tag()}.whl"
    path = os.path.join(wheel_directory, wheel_name)
    record = []
    paths_py = ("# Written by ktune's wheel: where this package finds the ktune executable.\n"
                "BUILD_EXECUTABLE = ''\n"
                f"INSTALLED_EXECUTABLE = {_executable_relative_path()!r}\n").encode()
    with zipfile.ZipFile(path + ".part", "w", zipfile.ZIP_DEFLATED) as whl:
        def add(arcname, data, mode=0o644):
            info = zipfile.ZipInfo(arcname, date_time=(2026, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            whl.writestr(info, data)
            record.append(_record_line(arcname, data))

        for arcname, file in _members(staging, python_dir, libdir):
            with open(file, "rb") as f:
                data = f.read()
            add(arcname, data, 0o755 if os.access(file, os.X_OK) else 0o644)
        add("ktune/_paths.py", paths_py)
        info = _dist_info()
        add(f"{info}/METADATA", _metadata().encode())
        add(f"{info}/WHEEL", _wheel_file().encode())
        add(f"{info}/top_level.txt", b"ktune\n")
        record.append(f"{info}/RECORD,,")  # the RECORD lists itself without a digest
        rest = "\n".join(record) + "\n"
        record_info = zipfile.ZipInfo(f"{info}/RECORD", date_time=(2026, 1, 1, 0, 0, 0))
        record_info.external_attr = 0o100644 << 16
        whl.writestr(record_info, rest, compress_type=zipfile.ZIP_DEFLATED)
    os.replace(path + ".part", path)
    return wheel_name


# PEP 517 hooks.

def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    folder = os.path.join(metadata_directory, _dist_info())
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata())
    with open(os.path.join(folder, "WHEEL"), "w", encoding="utf-8") as f:
        f.write(_wheel_file())
    return _dist_info()


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    settings = dict(config_settings or {})
    unknown = sorted(set(settings) - {"build-dir", "jobs"})
    if unknown:
        raise BuildError(f"unknown config setting {unknown[0]!r} (known: build-dir, jobs)")
    build_dir = _build(settings)
    python_dir = _cache_value(build_dir, "KTUNE_PYTHON_INSTALL_DIR") or "lib/python3/dist-packages"
    libdir = _cache_value(build_dir, "CMAKE_INSTALL_LIBDIR") or "lib"
    with tempfile.TemporaryDirectory(prefix="ktune-wheel-") as staging:
        _run(["cmake", "--install", build_dir, "--prefix", staging, "--strip"], "installing ktune")
        return _pack(staging, python_dir, libdir, wheel_directory)
