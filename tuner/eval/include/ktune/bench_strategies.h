// Benchmarking search strategies on recorded spaces: each strategy runs many times (seeds) on
// each space with an in-memory evaluation loop, and is scored by how close it gets to the
// optimum at given budgets and by the methodology of Willemsen et al. (FGCS 2024): its
// best-so-far curve standardised against calculated random search. docs/replay.md gives the
// definitions.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ktune/replay.h"
#include "ktune/space.h"
#include "ktune/strategy.h"
#include "ktune/transfer.h"

namespace ktune {

// A recorded space: every valid configuration of a search space with its recorded outcome.
struct BenchSpace {
  std::string name;
  std::string kernel;
  std::string device;
  std::shared_ptr<const SearchSpace> space;
  std::vector<Config> configs;    // the valid configurations, in enumeration order
  std::vector<Outcome> outcomes;  // per config; missing from the recording: invalid
  std::unordered_map<Config, std::size_t, ConfigHash> index;
  std::vector<std::string> notes;
  // Transfer from other recordings: every run opens with TransferSearch over these.
  std::vector<TransferSource> transfer;
  std::size_t transfer_opening = kTransferTopK;

  // Statistics over the ok outcomes (NaN when there is none).
  std::size_t ok_count() const;
  double optimum() const;
  double median() const;
  double worst() const;
};

// Builds a BenchSpace; `outcome` gives the recorded outcome of each valid configuration.
BenchSpace make_bench_space(std::string name, std::shared_ptr<const SearchSpace> space,
                            const std::function<Outcome(const Config&)>& outcome);
// The space of a recording as replay_target() builds it, answered by a ReplayBackend. With
// objective "energy" (joules per run) or "edp" (joules times seconds per run) each outcome is
// that value of the recorded energies (Kernel Tuner's nvml_energy) instead of the time, and a
// configuration recorded without an energy is a failure; Error(kInput) for a recording without
// any energy, Error(kUsage) for another name.
BenchSpace bench_space_from_recording(const Recording& recording, const Registry* registry,
                                      std::string name = {}, const std::string& objective = "time");

struct BenchOptions {
  std::vector<std::string> strategies;
  std::vector<std::uint64_t> budgets = {25, 50, 100, 200, 400};
  std::uint64_t seeds = 50;
  std::uint64_t first_seed = 1;
  std::map<std::string, std::string> strategy_options;  // given to every strategy
  double cutoff = 0.96;                // fraction of the way from the median to the optimum
  std::size_t batch = 1;               // configurations asked for at a time
  std::uint64_t proposal_factor = 20;  // at most this many proposals per evaluation of budget
  // Stagnation windows (ktune/stagnation.h): each run is also scored as if it had stopped after
  // that many evaluations without an improvement beyond the noise, at each budget.
  std::vector<std::uint64_t> stagnation;
  std::function<void(const std::string&)> progress;  // a line per (strategy, space)
};

// One run of a strategy: its best-so-far time after each evaluation.
struct BenchRun {
  std::vector<double>
      best;  // best[e - 1]: fastest ok time in the first e evaluations (NaN: none yet)
  std::uint64_t evaluations = 0;  // distinct configurations evaluated (duplicates are free)
  std::uint64_t proposals = 0;    // configurations proposed, duplicates included
  std::uint64_t duplicates = 0;
  std::string stopped;  // budget | exhausted | no proposal | proposal cap
};

// Runs one strategy on one space for `evaluations` distinct evaluations: duplicates are answered
// from memory and do not count, failures are told as failures, and at most proposal_factor x
// evaluations proposals are taken so a strategy that only repeats itself ends.
BenchRun run_strategy(const BenchSpace& space, const std::string& strategy, std::uint64_t seed,
                      std::uint64_t evaluations, const BenchOptions& options);
// The same with a strategy object (not yet started).
BenchRun run_strategy(const BenchSpace& space, Strategy& strategy, std::uint64_t seed,
                      std::uint64_t evaluations, const BenchOptions& options);

// Expected best (minimum) of `draws` draws without replacement from `sorted` (ascending).
double expected_random_best(const std::vector<double>& sorted, std::uint64_t draws);

struct SpaceSummary {
  std::string name, kernel, device;
  std::uint64_t configs = 0;  // valid configurations of the space
  std::uint64_t ok = 0;
  double optimum_ms = 0, median_ms = 0, cutoff_ms = 0;
  std::uint64_t cutoff_budget = 0;      // evaluations calculated random search needs to the cut-off
  std::vector<double> random_fraction;  // optimum / expected random best, per budget
  std::vector<std::string> notes;
};

// A strategy's runs stopped by the stagnation stop (BenchOptions::stagnation) or the budget,
// whichever came first: means over seeds.
struct StoppedResult {
  std::uint64_t window = 0, budget = 0;
  double fraction = 0;     // optimum / best found when it stopped
  double evaluations = 0;  // evaluations until it stopped
  double worst = 0;        // the lowest fraction of any seed
};

struct StrategyResult {
  std::string strategy;
  std::string space;             // a space name, or "overall" (mean over the spaces)
  std::vector<double> fraction;  // per budget: optimum / best found (0 when none), mean over seeds
  double score = 0;              // mean over seeds of the mean standardised curve up to the cut-off
  double score_stddev = 0;       // over seeds (for "overall": mean of the spaces' deviations)
  double evaluations = 0;        // mean distinct evaluations per run
  double duplicates = 0;         // mean duplicate proposals per run
  std::uint64_t capped = 0;      // runs ended by the proposal cap
  double seconds = 0;
  std::vector<StoppedResult> stopped;  // per stagnation window, then per budget
};

// A space left out of the benchmark: it could not be read (the caller's) or a strategy failed on
// it, with the error.
struct SpaceFailure {
  std::string space;
  std::string error;
};

struct BenchReport {
  BenchOptions options;
  std::vector<SpaceSummary> spaces;
  std::vector<StrategyResult> results;  // per strategy: each space, then "overall"
  std::vector<SpaceFailure> failed;     // spaces left out, not in `spaces` nor `results`
};

// A space on which a strategy fails (throws) is left out of every strategy's results and the
// overall means, so they cover the same spaces, and is listed in `failed`; the others are
// benchmarked. When every space fails, the first failure is thrown (a strategy option that a
// strategy refuses, say, fails everywhere).
BenchReport bench_strategies(const std::vector<BenchSpace>& spaces, const BenchOptions& options);

// Readable tables and the JSON document of `ktune bench-strategies`.
std::string format_bench_report(const BenchReport& report);
std::string bench_report_json(const BenchReport& report);

}  // namespace ktune
