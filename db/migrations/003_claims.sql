-- Schema 3: claims, so that processes tuning one (kernel, device, problem) at once never measure
-- a configuration twice. docs/database.md is the contract.
--   claims  a configuration that a process has taken to measure: taken in the transaction that
--           found no trial for it, before it is compiled; deleted with the trial that answers
--           it, when its process ends its run, or read as expired when its process is gone
--           (host, boot id, pid and start time, as runs record them; a claim of another host's
--           process expires after claim_seconds).
CREATE TABLE claims (
  kernel_id INTEGER NOT NULL REFERENCES kernels (id),
  device_id INTEGER NOT NULL REFERENCES devices (id),
  problem_id INTEGER NOT NULL REFERENCES problems (id),
  replayed INTEGER NOT NULL CHECK (replayed IN (0, 1)),
  config_key TEXT NOT NULL,
  host TEXT NOT NULL,
  boot_id TEXT NOT NULL,
  pid INTEGER NOT NULL,
  process_start INTEGER NOT NULL,
  owner INTEGER NOT NULL,
  claimed_unix INTEGER NOT NULL,
  PRIMARY KEY (kernel_id, device_id, problem_id, replayed, config_key)
) WITHOUT ROWID;
CREATE INDEX claims_by_owner ON claims (owner);
