-- Schema 10: what a run ranks its configurations by. docs/database.md is the contract.
--   runs.objective                   'time' (the default, and every run before schema 10), or
--                                    the name of a value computed from each trial (Kernel
--                                    Tuner's objective over its metrics: 'GFLOP/s')
--   runs.objective_higher_is_better  1 where a higher value of it is better
--   trials.objective                 the trial's value of its run's objective; NULL for a run
--                                    that ranks by time, and where the trial has no value
--   best.objective, best.objective_higher_is_better
--                                    the objective the best was chosen by
--   trials.sm_clock_mhz, trials.temperature_c
--                                    the GPU's SM clock and temperature read through NVML
--                                    right after the timed samples; -1 where not read
ALTER TABLE runs ADD COLUMN objective TEXT NOT NULL DEFAULT 'time' CHECK (objective <> '');
ALTER TABLE runs ADD COLUMN objective_higher_is_better INTEGER NOT NULL DEFAULT 0
  CHECK (objective_higher_is_better IN (0, 1));
ALTER TABLE trials ADD COLUMN objective REAL;
ALTER TABLE best ADD COLUMN objective TEXT NOT NULL DEFAULT 'time' CHECK (objective <> '');
ALTER TABLE best ADD COLUMN objective_higher_is_better INTEGER NOT NULL DEFAULT 0
  CHECK (objective_higher_is_better IN (0, 1));
ALTER TABLE trials ADD COLUMN sm_clock_mhz INTEGER NOT NULL DEFAULT -1;
ALTER TABLE trials ADD COLUMN temperature_c INTEGER NOT NULL DEFAULT -1;
