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
    import optuna
    from optuna.distributions import CategoricalDistribution, IntDistribution
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
        return s.TPESampler(seed=seed, warn_independent_sampling=False, **kwargs)
    if name == "cmaes":
        return s.CmaEsSampler(seed=seed, warn_independent_sampling=False, **kwargs)
    if name == "nsgaii":
        return s.NSGAIISampler(seed=seed, **kwargs)
    if name == "qmc":
        return s.QMCSampler(seed=seed, warn_independent_sampling=False, **kwargs)
    return s.RandomSampler(seed=seed)


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


REDIS_SCHEMES = ("redis://", "rediss://", "unix://")
# How long the study lock of a Redis storage outlives a worker killed while holding it: a lock
# is held only while a worker reads the study and draws (well under a second).
REDIS_LOCK_SECONDS = 10


def make_storage(url):
    if not url:
        return None
    if url.startswith("journal:"):
        path = url[len("journal:"):]
        if not path:
            raise UsageError("study_storage journal:PATH needs a path")
        from optuna.storages import JournalStorage

        return JournalStorage(_journal_file(path))
    if url.startswith(REDIS_SCHEMES):
        try:
            import redis  # noqa: F401 (Optuna's JournalRedisStorage needs redis-py)
        except ImportError:
            raise UsageError(f"study_storage '{url}': the Python package redis is missing "
                             "(apt-get install python3-redis)") from None
        from optuna.storages import JournalRedisStorage, JournalStorage

        return JournalStorage(JournalRedisStorage(url))
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
    died inside its ask (or was not written by ktune)."""
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
        self.lock_ = StudyLock(storage, study_name) if storage else None
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
        except (ValueError, ImportError) as e:
            if storage:
                raise UsageError(f"study_storage '{storage}': {type(e).__name__}: {e}") from None
            raise
        finally:
            self.unlock()
        self.asked = {}  # trial number -> Trial, until told

    def ask(self, fixed):
        if fixed is not None:
            self.study.enqueue_trial(dict(zip(self.names, fixed)))
        trial = self.study.ask(self.distributions)
        if self.shared:
            trial.set_user_attr("ktune_worker", WORKER)
        self.asked[trial.number] = trial
        return trial.number, [int(trial.params[name]) for name in self.names]

    def tell(self, number, state, value, config_key, status):
        trial = self.asked.pop(number)
        if config_key is not None:
            trial.set_user_attr("ktune_config", config_key)
        if status is not None:
            trial.set_user_attr("ktune_status", status)
        state = TrialState(state)
        if state == TrialState.COMPLETE:
            self.study.tell(trial, float(value))
        else:
            self.study.tell(trial, state=state)

    def claim(self, number, config_key):
        self.asked[number].set_user_attr("ktune_config", config_key)

    def lock(self):
        if self.lock_ is not None:
            self.lock_.acquire()

    def unlock(self):
        if self.lock_ is not None:
            self.lock_.release()

    def trials(self, first):
        out = []
        now = datetime.datetime.now()
        for t in self.study.get_trials(deepcopy=False):
            if t.number < first:
                continue
            state = int(t.state)
            # Another worker's trial whose process is gone: reported as ABANDONED (5), so its
            # configuration is free to measure again.
            if self.shared and t.state == TrialState.RUNNING and t.number not in self.asked:
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
