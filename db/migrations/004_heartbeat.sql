-- Schema 4: runs.heartbeat_unix, when (Unix seconds) the run's process last said it was alive.
-- docs/database.md is the contract. A process on another host cannot be checked by its pid, so
-- there a running run whose heartbeat is older than Store::run_silence_seconds reads as
-- interrupted (and is closed on the next read-write open); 0 means unknown (runs before schema 4).
ALTER TABLE runs ADD COLUMN heartbeat_unix INTEGER NOT NULL DEFAULT 0;
