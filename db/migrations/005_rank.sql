-- Schema 5: trials.rank_ms. docs/database.md is the contract. A re-timing trial (kind 1) is
-- ranked on some of its interleaved rounds and timed (time_ms, samples_ms) on the others, so
-- that the time stored for the finalist ranked fastest is not the draw that made it win; rank_ms
-- is the median of the ranking rounds. NULL for every other trial and for re-timings before
-- schema 5, which were ranked by time_ms.
ALTER TABLE trials ADD COLUMN rank_ms REAL;
