-- Schema 2: state that schema 1 kept in text is typed. docs/database.md is the contract.
--   trials.kind        what a trial was for (0 search, 1 re-time, 2 warm start); schema 1 marked
--                      the final re-timing by the error text 're-timed interleaved ...', which
--                      replay then copied into search trials
--   trials.l2_flushed  whether the L2 was flushed before each timed run (-1 unknown)
--   runs.replayed      1 when the run's measurements were replayed from a recording, not measured
--   runs.flush_l2      the run's L2 flush mode: auto, always, never ('' before schema 2)
--   runs.pid, runs.boot_id, runs.process_start
--                      the process that runs it, so a run whose process is gone is shown as
--                      interrupted instead of running forever
-- Devices of replayed runs had arch 'replay'; they get their own architecture.

ALTER TABLE trials ADD COLUMN kind INTEGER NOT NULL DEFAULT 0 CHECK (kind >= 0);
ALTER TABLE trials ADD COLUMN l2_flushed INTEGER NOT NULL DEFAULT -1;

-- The re-timing of a schema-1 run is the block of ok trials at its end whose error says so; the
-- same text elsewhere in a run is a copy that replay made, and is a search trial.
UPDATE trials SET kind = 1
WHERE status = 0 AND error LIKE 're-timed interleaved%'
  AND NOT EXISTS (SELECT 1 FROM trials later
                  WHERE later.run_id = trials.run_id AND later.id > trials.id
                    AND later.error NOT LIKE 're-timed interleaved%');
UPDATE trials SET error = '' WHERE status = 0 AND error LIKE 're-timed interleaved%';

ALTER TABLE runs ADD COLUMN replayed INTEGER NOT NULL DEFAULT 0 CHECK (replayed IN (0, 1));
UPDATE runs SET replayed = 1 WHERE backend = 'replay';
ALTER TABLE runs ADD COLUMN flush_l2 TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN pid INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN boot_id TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN process_start INTEGER NOT NULL DEFAULT 0;
-- A schema-1 run still marked running names no process that could be checked; none of them
-- can still be writing once the file is at schema 2 (a schema-1 ktune refuses it).
UPDATE runs SET status = 'interrupted' WHERE status = 'running';

CREATE TRIGGER runs_status_insert BEFORE INSERT ON runs
WHEN NEW.status NOT IN ('running', 'finished', 'interrupted', 'failed')
  OR NEW.flush_l2 NOT IN ('', 'auto', 'always', 'never')
BEGIN
  SELECT RAISE(ABORT, 'runs.status must be running, finished, interrupted or failed, and runs.flush_l2 auto, always or never');
END;
CREATE TRIGGER runs_status_update BEFORE UPDATE OF status, flush_l2 ON runs
WHEN NEW.status NOT IN ('running', 'finished', 'interrupted', 'failed')
  OR NEW.flush_l2 NOT IN ('', 'auto', 'always', 'never')
BEGIN
  SELECT RAISE(ABORT, 'runs.status must be running, finished, interrupted or failed, and runs.flush_l2 auto, always or never');
END;

UPDATE OR IGNORE devices
SET arch = CASE WHEN cc_major > 0 THEN 'sm_' || cc_major || cc_minor ELSE '' END
WHERE arch = 'replay';
