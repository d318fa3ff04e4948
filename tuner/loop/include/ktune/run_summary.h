// What a tuning run did: its trials by outcome, where its time went, the GPU's clocks, the
// finalists and the best (TuneSummary), and the JSON the run row keeps and `tune --json` prints.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ktune/backend.h"
#include "ktune/store.h"

namespace ktune {

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
  std::uint64_t cut = 0;  // measured trials whose sampling the early cut-off stopped
  // Configurations in the stored time-energy Pareto set after the run (Store::update_pareto);
  // 0 where no trial has an energy.
  std::size_t pareto = 0;
  // Energy was asked for (MeasureOptions::energy_ms) but an ok trial has none: why (the first
  // such trial's Measurement::energy_source); empty otherwise.
  std::string energy_missing;
  bool stagnated = false;  // the stagnation stop ended the search (Budget::stagnation)
  // --stop-at-ceiling (TuneOptions::stop_at_ceiling): whether the device's ceilings were stored,
  // whether the kernel's rate could be held against them, the best's fraction of the nearer
  // one, and whether that ended the search.
  struct Ceiling {
    double wanted = std::numeric_limits<double>::quiet_NaN();
    bool stored = false, declared = false, reached = false;
    double fraction = std::numeric_limits<double>::quiet_NaN();
  } ceiling;
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

}  // namespace ktune
