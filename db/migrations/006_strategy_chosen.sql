-- Schema 6: runs.strategy_chosen. docs/database.md is the contract. A run of the strategy `auto`
-- keeps `auto` in runs.strategy and the strategy auto chose for it (brute_force, random, bayes)
-- here; a run of a named strategy keeps ''. Runs before schema 6 wrote both into runs.strategy,
-- as "auto (bayes)": they are split here.
ALTER TABLE runs ADD COLUMN strategy_chosen TEXT NOT NULL DEFAULT '';
UPDATE runs SET strategy_chosen = substr(strategy, 7, length(strategy) - 7), strategy = 'auto'
  WHERE strategy LIKE 'auto (%)';
