-- Schema 8: trials.cut. docs/database.md is the contract. 1 for a search trial whose sampling
-- stopped early because its first samples were already far slower than the run's best
-- (docs/measuring.md#early-cut-off): its time is the median of the samples it has, and it is
-- never a best, a finalist or a candidate of a family. 0 for every other trial.
ALTER TABLE trials ADD COLUMN cut INTEGER NOT NULL DEFAULT 0 CHECK (cut IN (0, 1));
