-- Schema 11: energy. docs/database.md is the contract.
--   trials.power_w   the board's mean power (W) while the configuration ran back to back after
--                    its timed samples, read through NVML (docs/energy.md); NULL where
--                    energy was not measured or could not be read
--   trials.energy_j  the energy of one run (J): power_w times the trial's time
--   pareto           per (kernel, device, problem): the configurations no other beats in both
--                    time and energy (each by its latest trial with an energy), rewritten by
--                    every run that measures energy and by merge; `ktune best --policy` and
--                    the run-time client choose among them
ALTER TABLE trials ADD COLUMN power_w REAL CHECK (power_w IS NULL OR power_w > 0);
ALTER TABLE trials ADD COLUMN energy_j REAL CHECK (energy_j IS NULL OR energy_j > 0);
CREATE TABLE pareto (
  kernel_id  INTEGER NOT NULL REFERENCES kernels (id),
  device_id  INTEGER NOT NULL REFERENCES devices (id),
  problem_id INTEGER NOT NULL REFERENCES problems (id),
  trial_id   INTEGER NOT NULL REFERENCES trials (id),
  PRIMARY KEY (kernel_id, device_id, problem_id, trial_id)
);
CREATE TRIGGER pareto_insert_requires_ok_trial_with_energy BEFORE INSERT ON pareto
WHEN NOT EXISTS (SELECT 1 FROM trials t WHERE t.id = NEW.trial_id AND t.status = 0
                 AND t.cut = 0 AND t.energy_j > 0 AND t.time_ms > 0
                 AND t.kernel_id = NEW.kernel_id AND t.device_id = NEW.device_id
                 AND t.problem_id = NEW.problem_id)
BEGIN
  SELECT RAISE(ABORT, 'pareto must point at an ok trial with an energy, of the same kernel, device and problem');
END;
