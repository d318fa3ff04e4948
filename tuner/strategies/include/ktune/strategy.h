// Search strategies, ask/tell. A strategy proposes configurations and learns their outcome,
// including why a trial failed; it never runs anything itself.
//
// Call order, fixed by the tuning loop:
//   1. start(context) once.
//   2. Any interleaving of ask(n) and tell(config, outcome). Every configuration returned by
//      ask() is told exactly once, possibly after further ask() calls and out of order (the
//      loop compiles ahead). A strategy may propose a configuration it proposed before; the loop
//      answers such duplicates from the results database without measuring again.
//   3. The loop stops when the budget is spent, when ask() returns nothing while no tell is
//      outstanding, or on Ctrl-C. There is no finish call; a strategy holds no resources.
// ask() must only return valid configurations of the space (SearchSpace::is_valid).
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ktune/space.h"
#include "ktune/status.h"

namespace ktune {

// What a strategy learns from a trial. Non-ok statuses are failures, never fake times.
struct Outcome {
  TrialStatus status = TrialStatus::kOk;
  double time_ms = 0;  // objective (lower is better); meaningful only when status is ok
  bool from_cache = false;
};

struct StrategyContext {
  const SearchSpace* space = nullptr;
  std::uint64_t seed = 1;
  std::uint64_t budget = UINT64_MAX;  // evaluations the loop will allow
  double budget_seconds = std::numeric_limits<double>::infinity();  // wall time it will allow
  std::map<std::string, std::string> options;                       // --strategy-option key=value
  std::vector<Config> warm_start;                                   // to be proposed first
  // This process's part of a search that `parts` processes share through one results database
  // (`--part`, `tune --devices`): brute force and random search start their order at the
  // part's share of it; a search strategy seeds itself apart from the other parts.
  std::uint32_t part = 0, parts = 1;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string name() const = 0;
  virtual void start(const StrategyContext& context) = 0;
  // Up to max_count configurations to evaluate next. Returning fewer is fine; returning none
  // means "nothing to propose until a tell" or, with exhausted(), "done".
  virtual std::vector<Config> ask(std::size_t max_count) = 0;
  virtual void tell(const Config& config, const Outcome& outcome) = 0;
  // True when the strategy will propose nothing more (brute force has visited every config).
  virtual bool exhausted() const = 0;
  // The fewest configurations worth one ask() once the loop's queue holds some: a strategy
  // whose ask has a fixed cost (a shared study's lock and read of the other workers' trials)
  // is asked for several at a time rather than one as each slot frees. 1: ask whenever there
  // is room, so the strategy proposes from the newest results.
  virtual std::size_t ask_batch() const { return 1; }
  // True when what the strategy proposes does not depend on the results told (brute force and
  // random search follow an order fixed at start): the loop may then queue and compile far
  // ahead, in bigger NVRTC batches, without making the search any worse.
  virtual bool fixed_order() const { return false; }
};

// Creates a strategy by name ("brute_force", "random", ...); throws Error(kUsage) listing the
// known names. Options are validated by the strategy's start().
std::unique_ptr<Strategy> make_strategy(const std::string& name);
std::vector<std::string> strategy_names();
// Proposes exactly `configs` (each valid in the space it starts on; others are left out), in
// order, then nothing: the cross-measurement of a family's candidates. Named "listed"; not a
// --strategy name.
std::unique_ptr<Strategy> make_listed_strategy(std::vector<Config> configs);

// What the registry knows of a strategy besides its name.
struct StrategyTraits {
  // Its state is a study in a storage that several processes can share (the study_storage
  // option: the Optuna strategies); the others keep their state in the process.
  bool shares_study = false;
};
// Throws Error(kUsage) listing the known names, as make_strategy does.
StrategyTraits strategy_traits(const std::string& name);
// The strategies whose state several processes can share.
std::vector<std::string> strategies_sharing_a_study();

// `--strategy auto` (the default of `ktune tune`): brute force when the run has no budget; random
// search without replacement (every configuration, in a seeded random order) when every valid
// configuration of the space fits within its evaluation budget; otherwise the search strategy
// that did best on the recorded spaces (docs/strategies.md#measurements).
inline constexpr const char* kAutoSearchStrategy = "bayes";
struct AutoChoice {
  std::string strategy;  // brute_force, random or kAutoSearchStrategy
  std::string
      reason;  // one line, e.g. "a budget of 200 evaluations, below the 5874 valid configurations"
};
AutoChoice choose_auto_strategy(const SearchSpace& space, std::uint64_t budget_evaluations,
                                double budget_seconds = std::numeric_limits<double>::infinity());
// auto takes no options: they belong to the strategy it chooses, which depends on the budget.
// Throws Error(kUsage) naming the first one given.
void check_auto_options(const std::map<std::string, std::string>& options);

}  // namespace ktune
