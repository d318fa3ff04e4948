// A timeline of a tuning run (`ktune tune --trace FILE`): what each compile thread, the tuning
// loop and the GPU did when, written in the Trace Event Format that Perfetto and
// chrome://tracing open (docs/measuring.md#timeline). Recording is thread-safe: the compile
// pool's threads add their batches while the loop adds its trials. TraceObserver is the run
// observer that draws a run on it.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ktune/observer.h"

namespace ktune {

class Trace {
 public:
  using Clock = std::chrono::steady_clock;

  // Times are written as microseconds since `origin`.
  explicit Trace(Clock::time_point origin = Clock::now()) : origin_(origin) {}

  // Something that took from `begin` to `end` on the row `lane` (rows appear in the order of
  // their first event). An end before the begin is taken as the begin.
  void span(const std::string& lane, const std::string& name, Clock::time_point begin,
            Clock::time_point end, nlohmann::json args = nlohmann::json::object());
  // A value that holds from `at` until the next value of the same counter.
  void counter(const std::string& name, Clock::time_point at, double value);

  std::size_t size() const;
  // {"traceEvents": [...], "displayTimeUnit": "ms"}: row names as metadata events, then the
  // events in the order they were added.
  nlohmann::json to_json() const;
  // Writes to_json() to `path` (write_maybe_gzip: gzipped where the name ends in ".gz", through a
  // temporary file renamed, so a reader never sees half a file). Throws Error(kInput) naming the
  // path when it cannot.
  void write(const std::filesystem::path& path) const;

 private:
  int lane_id(const std::string& lane);  // with the mutex held
  double micros(Clock::time_point t) const;

  Clock::time_point origin_;
  mutable std::mutex mutex_;
  std::map<std::string, int> lanes_;
  std::vector<std::string> lane_order_;
  std::vector<nlohmann::json> events_;
};

// Draws a run on a timeline, row by row: "run" (the search, the finalists' re-timing, the best
// and the run's record), "loop: waiting" (for a compilation, at least 50 us; for the backend's
// preparation), "GPU worker" (its preparation, then each measurement, from when the backend
// could start it to its result), one row per compile thread ("compile N": each program, or cache
// hits), and the counter "measurements in flight".
class TraceObserver final : public RunObserver {
 public:
  explicit TraceObserver(std::shared_ptr<Trace> trace) : trace_(std::move(trace)) {}
  void activity(Activity what, RunClock::time_point begin, RunClock::time_point end) override;
  void prepared(RunClock::time_point begin, RunClock::time_point end,
                const std::map<std::string, double>& steps) override;
  void measured(const std::string& key, const Measurement& m, std::size_t cubin_bytes,
                RunClock::time_point submitted, RunClock::time_point collected) override;
  void in_flight(std::size_t count, RunClock::time_point at) override;
  void phase(RunPhase phase, RunClock::time_point begin, RunClock::time_point end,
             std::size_t finalists) override;
  void compiled(const CompileBatchRecord& record) override;

 private:
  std::shared_ptr<Trace> trace_;
  RunClock::time_point gpu_free_{};  // when the backend's last result came back
};

}  // namespace ktune
