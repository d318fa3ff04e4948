// The Optuna strategies as seen from ktune (implemented in strategy.cpp):
// the loader of libktune_optuna.so, the one TrialStatus -> Optuna state mapping, and the
// strategy itself, with counters and a view of its study for tests and benchmarks. Internal:
// not part of the public include root.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ktune/strategy.h"
#include "strategies/optuna/module.h"

namespace ktune::optuna {

// The one mapping from ktune's outcome to Optuna's trial state: ok is COMPLETE (with its time),
// every other status is FAIL (never a fake time).
int trial_state(TrialStatus status);

// Where libktune_optuna.so is looked for, in order: $KTUNE_OPTUNA_MODULE alone when set, else
// the running executable's directory, then the build tree and the install lib directory.
std::vector<std::string> module_candidates();

// Loads the module once per path (dlopen, never closed) and checks its ABI version. Throws
// Error(kPlugin) naming what to install when the module, libpython or the entry is missing.
const KtuneOptunaApi& load_module();

// "Python 3.11.2 (/usr/bin/python3, prefix /usr), Optuna 3.1.0"; starts Python. Throws like
// load_module(), and Error(kPlugin) when Python does not start.
std::string describe_python();

struct Stats {
  std::uint64_t asks = 0;        // trials asked from Optuna
  std::uint64_t proposed = 0;    // configurations handed to the loop
  std::uint64_t projected = 0;   // invalid proposals projected onto the nearest valid config
  std::uint64_t rejected = 0;    // invalid proposals told as failures (constraints=reject)
  std::uint64_t answered = 0;    // proposals of configurations already told, answered at once
  std::uint64_t waited = 0;      // proposals of configurations in flight, told with them
  std::uint64_t neighbours = 0;  // duplicates replaced by their nearest new configuration
  std::uint64_t elsewhere = 0;   // proposals another worker of a shared study is measuring
  std::uint64_t tells = 0;       // trials told to Optuna
  double optuna_seconds = 0;     // time spent in the module's ask and tell
};

// One trial of the study, read back from Optuna.
struct StudyTrial {
  std::int64_t number = 0;
  int state = KTUNE_OPTUNA_RUNNING;
  double value = 0;                   // NaN unless COMPLETE
  std::optional<Config> params;       // what Optuna proposed
  std::optional<std::string> config;  // user attr ktune_config: the config evaluated instead
  std::optional<std::string> status;  // user attr ktune_status: why it failed
};

class OptunaStrategy final : public Strategy {
 public:
  // name: the registered --strategy value; sampler: tpe, cmaes, nsgaii, qmc, random, grid.
  OptunaStrategy(std::string name, std::string sampler);
  ~OptunaStrategy() override;

  std::string name() const override;
  void start(const StrategyContext& context) override;
  std::vector<Config> ask(std::size_t max_count) override;
  void tell(const Config& config, const Outcome& outcome) override;
  bool exhausted() const override;
  // A shared study is asked for 4 at a time: its lock and read are paid once per ask.
  std::size_t ask_batch() const override;

  const Stats& stats() const;
  std::vector<StudyTrial> study_trials() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ktune::optuna
