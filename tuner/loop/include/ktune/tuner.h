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
#include "ktune/store.h"
#include "ktune/strategy.h"
#include "ktune/transfer.h"

namespace ktune {

struct Budget {
  std::uint64_t evaluations = std::numeric_limits<std::uint64_t>::max();  // trials told
  double seconds = std::numeric_limits<double>::infinity();               // wall time
};

struct TuneOptions {
  std::string strategy = "brute_force";
  std::map<std::string, std::string> strategy_options;
  std::uint64_t seed = 1;
  Budget budget;
  MeasureOptions measure;
  // Trials already in the database for this kernel source, space, device and problem are
  // answered from there instead of being measured again (resume, duplicates).
  bool reuse = true;
  // Start the search from what other devices or problems say (ktune/transfer.h): a transfer
  // opening of `warm_start_top` evaluations (TransferSearch) over `transfer` and this kernel's
  // trials stored for other devices and problems, then the strategy from there.
  bool warm_start = false;
  std::vector<TransferSource> transfer;  // recordings given with --warm-start-from
  std::size_t warm_start_top = kTransferTopK;
  std::uint32_t part = 0, parts = 1;  // StrategyContext::part
  int retime_top = 5;  // finalists re-timed at the end (0: keep the search's ranking)
  int retime_rounds = 10;
  std::size_t lookahead = 0;  // configs compiled ahead of the backend; 0: 4 x compile threads
  std::string command_line;   // provenance
};

// The GPU's SM clock and temperature over a run's measured trials (NVML; no readings without
// it). A run whose SM clock dropped while trials were timed is flagged: its times may be slow.
struct GpuClockStats {
  std::uint64_t readings = 0;
  int sm_min_mhz = -1;
  int sm_max_mhz = -1;
  int sm_limit_mhz = -1;  // the device's highest SM clock
  int temperature_min_c = -1;
  int temperature_max_c = -1;
  std::uint64_t reasons = 0;  // NVML clock event reasons seen, OR-ed over the readings

  void add(const Measurement& m);
  // The SM clock fell more than 5% below the run's highest reading, or NVML named a power or
  // thermal slowdown (software power cap, hardware slowdown, thermal, power brake).
  bool dropped() const;
  // "SM 1755-1980 MHz (max 1980), 31-45 C", or "" without readings.
  std::string describe() const;
  // Why, for a flagged run, in words: the software power cap alone is the state a kernel at the
  // GPU's power limit runs in under load (its sustained time, not a fault of the measurement);
  // a thermal or hardware slowdown, or a clock drop without a named reason, may have slowed
  // some trials and not others. "" when not flagged.
  std::string verdict() const;
};
// {"readings", "sm_min_mhz", "sm_max_mhz", "sm_limit_mhz", "temperature_min_c",
//  "temperature_max_c", "reasons", "dropped"}: the run summary's and `tune --json`'s form.
nlohmann::json clocks_json(const GpuClockStats& c);
GpuClockStats clocks_from_json(const nlohmann::json& j);  // what clocks_json wrote

struct TuneSummary {
  std::int64_t run_id = 0;
  RunStatus status = RunStatus::kFinished;  // kFinished or kInterrupted (a failure throws)
  std::uint64_t trials = 0;                 // told to the strategy
  std::uint64_t measured = 0;               // evaluated by the backend
  std::uint64_t from_database = 0;          // answered from earlier trials
  std::map<std::string, std::uint64_t> by_status;
  double wall_seconds = 0;
  double first_result_seconds = 0;  // from the start to the first trial's result
  double prepare_seconds = 0;       // the backend's preparation (worker, inputs, reference)
  double wait_prepare_seconds = 0;  // of it, the time the loop waited with work to submit
  std::map<std::string, double> prepare_phases_seconds;  // the backend's steps of it
  double search_seconds = 0;        // from the start to the end of the search (before re-timing)
  double gpu_seconds = 0;           // GPU time in the trials' launches
  double timed_seconds = 0;         // GPU time of timed samples alone
  double compile_seconds = 0;       // summed over compile threads (cache hits excluded)
  double backend_seconds = 0;       // wall time inside backend.evaluate()
  double wait_compile_seconds = 0;  // wall time the loop waited for a compilation
  double store_seconds = 0;         // wall time in the results database: claims, look-ups, trials
  double wait_claim_seconds = 0;    // waiting for configurations another process is measuring
  double strategy_seconds = 0;      // wall time inside the strategy's ask() and tell()
  std::map<std::string, double> phases_seconds;  // the backend's evaluation phases, summed
  std::optional<TrialRecord> best;               // the winner (after re-timing), stored as best
  std::vector<TrialRecord> finalists;  // re-timed leaders, the best (ranked fastest) first
  GpuClockStats clocks;                // over the measured trials
  double sustain_seconds = 0;          // sustained load run before re-timing the finalists
  GpuClockStats retime_clocks;         // the clocks under load while re-timing them
};
// {"finalists", "sustain_seconds", "gpu_clocks" (clocks_json, where read)}: the final re-timing
// in the run summary's and `tune --json`'s form; null when nothing was re-timed.
nlohmann::json retime_json(const TuneSummary& s);
// The run's summary, as the run row keeps it (runs.summary) and `tune --json` prints it: every
// field of TuneSummary, the rates and shares of the wall time, the best and the finalists.
nlohmann::json summary_json(const TuneSummary& s);

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
