-- Schema 7: selectors, the run-time choice over the problems of a family (ktune/selector.h).
-- docs/database.md is the contract.
--   selectors  made when a family of problems of one kernel is tuned on one device: the
--              candidates measured at every problem of the family, their times, and what the
--              rule picked at each problem left out of the others (its held-out loss). json is
--              Selector::to_json; it names problems and configurations by key, not by row id,
--              so it reads the same after a merge. The newest selector of a (kernel, device)
--              answers; replayed = 1 for one made from replayed runs (it never answers a
--              program, as replayed bests do not).
CREATE TABLE selectors (
  id INTEGER PRIMARY KEY,
  kernel_name TEXT NOT NULL,
  kernel_id INTEGER NOT NULL REFERENCES kernels (id),
  device_id INTEGER NOT NULL REFERENCES devices (id),
  replayed INTEGER NOT NULL CHECK (replayed IN (0, 1)),
  created_at TEXT NOT NULL,
  method TEXT NOT NULL,
  problems INTEGER NOT NULL,
  candidates INTEGER NOT NULL,
  held_out_mean REAL,
  held_out_worst REAL,
  json TEXT NOT NULL,
  UNIQUE (kernel_id, device_id, replayed, created_at, json)
);
CREATE INDEX selectors_by_kernel ON selectors (kernel_name, device_id, created_at);
