// The tuning loop: asks a strategy for configurations, compiles them ahead on a thread pool,
// evaluates them on a backend, stores every trial, tells the strategy, and at the end re-times
// the leaders interleaved and records the winner as the best configuration.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ktune/backend.h"
#include "ktune/compiler.h"
#include "ktune/instance.h"
#include "ktune/observer.h"
#include "ktune/run_summary.h"
#include "ktune/store.h"
#include "ktune/strategy.h"
#include "ktune/transfer.h"

namespace ktune {

struct Budget {
  std::uint64_t evaluations = std::numeric_limits<std::uint64_t>::max();  // trials told
  double seconds = std::numeric_limits<double>::infinity();               // wall time
  // The stagnation stop (ktune/stagnation.h): the search ends after this many trials in a row
  // without an improvement beyond the noise; 0: never.
  std::uint64_t stagnation = 0;
};

struct TuneOptions {
  std::string strategy = "brute_force";  // as asked; "auto" is resolved by set_up_tuning()
  std::string strategy_chosen;           // what "auto" chose, which runs; '' for a named one
  std::map<std::string, std::string> strategy_options;
  std::uint64_t seed = 1;
  Budget budget;
  std::string effort = "default";       // the effort level (ktune/effort.h)
  bool budget_from_effort = false;      // the budget is the effort level's
  bool stagnation_from_effort = false;  // ... and so is the stagnation stop
  MeasureOptions measure;
  // End the search once the best reaches this fraction of the device's measured ceiling
  // (Store::ceilings; docs/effort.md#stop-at-the-speed-of-light); NaN: never.
  double stop_at_ceiling = std::numeric_limits<double>::quiet_NaN();
  // Trials already in the database for this kernel source, space, device and problem are
  // answered from there instead of being measured again (resume, duplicates).
  bool reuse = true;
  // Start the search from what other devices or problems say (ktune/transfer.h): a transfer
  // opening of `warm_start_top` evaluations (TransferSearch) over `transfer` and this kernel's
  // trials stored for other devices and problems, then the strategy from there.
  bool warm_start = false;
  std::vector<TransferSource> transfer;  // recordings given with --warm-start-from
  std::size_t warm_start_top = kTransferTopK;
  // Config keys the strategy proposes first (StrategyContext::warm_start): in a family, the best
  // configurations of the problems tuned before it. Keys of other spaces or invalid here are
  // left out. Their trials are stored as warm-start trials.
  std::vector<std::string> seeds;
  std::uint32_t part = 0, parts = 1;  // StrategyContext::part
  int retime_top = 5;  // finalists re-timed at the end (0: keep the search's ranking)
  int retime_rounds = 10;
  std::size_t lookahead = 0;  // configs compiled ahead of the backend; 0: 4 x compile threads
  std::string command_line;   // provenance
  // What the run ranks configurations by (ktune/store.h Objective; docs/python.md#objectives):
  // time, or a value of each ok trial that objective_value computes (NaN: none; such a trial is a
  // failure to the search and never the best). Another objective than time has no early
  // cut-off, and the run's best comes from the trials of runs with that objective.
  Objective objective;
  std::function<double(const TrialRecord&)> objective_value;
};

// Runs one tuning job, in named steps (loop/tuner.cpp): start the strategy (with the warm start),
// run the ask-compile-measure pipeline until the budget is spent or the strategy is done,
// re-time the finalists, record the best and its binary, and write the run's summary.
// `observer` (may be null) hears the run as it goes (ktune/observer.h): progress, the loop's
// activities, the measurements, the compile pool's programs.
//
// Run state: the run row is written when its first trial is stored (or at the end, when every
// trial came from the database), so a run that fails before any trial leaves no row. `stop`
// (may be null) ends the run cleanly after the trial in flight, keeping everything measured:
// status kInterrupted. Compile errors, crashes and wrong results are trials; a failure of the
// strategy, store or backend themselves marks a registered run kFailed and is rethrown.
TuneSummary tune(const KernelInstance& instance, Backend& backend, Store& store, Strategy& strategy,
                 const TuneOptions& options, CompilePool* pool, RunObserver* observer = nullptr,
                 const std::atomic<bool>* stop = nullptr);

// The database identity of a kernel as tuned: name, hashes of its source and of its space.
KernelRecord kernel_record(const KernelInstance& instance);
DeviceRecord device_record(const DeviceInfo& device);

}  // namespace ktune
