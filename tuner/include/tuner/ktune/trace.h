// A timeline of a tuning run (`ktune tune --trace FILE`): what each compile thread, the tuning
// loop and the GPU did when, written in the Trace Event Format that Perfetto and
// chrome://tracing open (docs/measuring.md#timeline). Recording is thread-safe: the compile
// pool's threads add their batches while the loop adds its trials.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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

}  // namespace ktune
