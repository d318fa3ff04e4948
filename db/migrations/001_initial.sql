-- Schema 1 of the ktune results database. docs/database.md is the contract for every table
-- and column here. This file is applied once, inside the migration runner's transaction, which
-- also records it in schema_migrations and sets ktune_meta.schema_version; never edit it after
-- a release: change the schema with a new numbered migration instead.

-- application = 'ktune' marks the file as ours; schema_version is the last migration applied.
CREATE TABLE ktune_meta (
  key   TEXT PRIMARY KEY NOT NULL,
  value TEXT NOT NULL
);

CREATE TABLE schema_migrations (
  version     INTEGER PRIMARY KEY NOT NULL,
  description TEXT NOT NULL,
  applied_at  TEXT NOT NULL
);

-- Identity is (name, arch, sm_count, memory_bytes); the other columns are refreshed by every
-- registration, so they describe the last driver and NVRTC that used the device.
CREATE TABLE devices (
  id             INTEGER PRIMARY KEY,
  name           TEXT NOT NULL,
  arch           TEXT NOT NULL,
  cc_major       INTEGER NOT NULL,
  cc_minor       INTEGER NOT NULL,
  sm_count       INTEGER NOT NULL,
  memory_bytes   INTEGER NOT NULL,
  l2_bytes       INTEGER NOT NULL,
  driver_version INTEGER NOT NULL,
  nvrtc_version  TEXT NOT NULL,
  created_at     TEXT NOT NULL,
  updated_at     TEXT NOT NULL,
  UNIQUE (name, arch, sm_count, memory_bytes)
);

-- A kernel row is one version of a kernel: a change to its source or its search space is a new
-- row, so trials of different versions never answer for each other.
CREATE TABLE kernels (
  id          INTEGER PRIMARY KEY,
  name        TEXT NOT NULL,
  source_hash TEXT NOT NULL,
  space_hash  TEXT NOT NULL,
  source      TEXT NOT NULL,
  entry       TEXT NOT NULL,
  spec_json   TEXT NOT NULL,
  created_at  TEXT NOT NULL,
  UNIQUE (name, source_hash, space_hash)
);
CREATE INDEX kernels_by_name ON kernels (name);

-- Problems belong to a kernel name, not a version, so a best can be looked up across versions.
CREATE TABLE problems (
  id          INTEGER PRIMARY KEY,
  kernel_name TEXT NOT NULL,
  key         TEXT NOT NULL,
  json        TEXT NOT NULL,
  UNIQUE (kernel_name, key)
);

CREATE TABLE runs (
  id               INTEGER PRIMARY KEY,
  kernel_id        INTEGER NOT NULL REFERENCES kernels (id),
  device_id        INTEGER NOT NULL REFERENCES devices (id),
  problem_id       INTEGER NOT NULL REFERENCES problems (id),
  backend          TEXT NOT NULL,
  strategy         TEXT NOT NULL,
  strategy_options TEXT NOT NULL,
  budget           TEXT NOT NULL,
  status           TEXT NOT NULL,
  started_at       TEXT NOT NULL,
  finished_at      TEXT NOT NULL,
  ktune_version    TEXT NOT NULL,
  nvrtc_version    TEXT NOT NULL,
  driver_version   INTEGER NOT NULL,
  host             TEXT NOT NULL,
  command_line     TEXT NOT NULL,
  seed             INTEGER NOT NULL,  -- the uint64 seed's bits as a signed 64-bit integer
  summary          TEXT NOT NULL
);
CREATE INDEX runs_by_kernel ON runs (kernel_id);

-- Trials are append-only. REAL columns hold NULL where the record has NaN (not measured).
CREATE TABLE trials (
  id                    INTEGER PRIMARY KEY,
  run_id                INTEGER NOT NULL REFERENCES runs (id),
  kernel_id             INTEGER NOT NULL REFERENCES kernels (id),
  device_id             INTEGER NOT NULL REFERENCES devices (id),
  problem_id            INTEGER NOT NULL REFERENCES problems (id),
  config_key            TEXT NOT NULL,
  config_json           TEXT NOT NULL,
  status                INTEGER NOT NULL CHECK (status >= 0),  -- TrialStatus value
  error                 TEXT NOT NULL,
  time_ms               REAL,
  time_min_ms           REAL,
  time_mean_ms          REAL,
  time_spread           REAL,
  sample_count          INTEGER NOT NULL,
  samples_ms            TEXT NOT NULL,  -- JSON array of numbers; null for a NaN sample
  gbps                  REAL,
  gflops                REAL,
  registers             INTEGER NOT NULL,
  local_bytes           INTEGER NOT NULL,
  spill_bytes           INTEGER NOT NULL,
  static_shared_bytes   INTEGER NOT NULL,
  dynamic_shared_bytes  INTEGER NOT NULL,
  max_threads_per_block INTEGER NOT NULL,
  occupancy             REAL,
  arch                  TEXT NOT NULL,
  compile_options       TEXT NOT NULL,
  compile_log           TEXT NOT NULL,
  cubin_hash            TEXT NOT NULL,
  compile_ms            REAL,
  eval_ms               REAL,
  created_at            TEXT NOT NULL
);
-- Resume looks up the latest trial of a config key; the rowid at the end of every index entry
-- makes "ORDER BY id DESC LIMIT 1" a single index probe.
CREATE INDEX trials_by_identity ON trials (kernel_id, device_id, problem_id, config_key);
CREATE INDEX trials_by_run ON trials (run_id);

-- kernel_name and problem_key repeat the kernel's and problem's identity so a client can look a
-- best up by name across kernel versions through one index.
CREATE TABLE best (
  kernel_id   INTEGER NOT NULL REFERENCES kernels (id),
  device_id   INTEGER NOT NULL REFERENCES devices (id),
  problem_id  INTEGER NOT NULL REFERENCES problems (id),
  trial_id    INTEGER NOT NULL REFERENCES trials (id),
  kernel_name TEXT NOT NULL,
  problem_key TEXT NOT NULL,
  updated_at  TEXT NOT NULL,
  PRIMARY KEY (kernel_id, device_id, problem_id)
);
CREATE INDEX best_by_kernel_name ON best (kernel_name, problem_key, device_id);

-- The best invariant holds even for writers that bypass the Store: the trial must be ok and
-- belong to the same (kernel, device, problem).
CREATE TRIGGER best_insert_requires_ok_trial BEFORE INSERT ON best
WHEN NOT EXISTS (SELECT 1 FROM trials t WHERE t.id = NEW.trial_id AND t.status = 0
                 AND t.kernel_id = NEW.kernel_id AND t.device_id = NEW.device_id
                 AND t.problem_id = NEW.problem_id)
BEGIN
  SELECT RAISE(ABORT, 'best must point at an ok trial of the same kernel, device and problem');
END;
CREATE TRIGGER best_update_requires_ok_trial BEFORE UPDATE ON best
WHEN NOT EXISTS (SELECT 1 FROM trials t WHERE t.id = NEW.trial_id AND t.status = 0
                 AND t.kernel_id = NEW.kernel_id AND t.device_id = NEW.device_id
                 AND t.problem_id = NEW.problem_id)
BEGIN
  SELECT RAISE(ABORT, 'best must point at an ok trial of the same kernel, device and problem');
END;

-- Compiled binaries of winners, keyed by CompileRequest::key, so a client can load a best
-- without NVRTC.
CREATE TABLE binaries (
  key          TEXT PRIMARY KEY NOT NULL,
  arch         TEXT NOT NULL,
  lowered_name TEXT NOT NULL,
  cubin        BLOB NOT NULL,
  created_at   TEXT NOT NULL
);
