// What a tuning run tells while it runs: its progress after each trial, what the loop spends its
// time on, the backend's preparation, each measurement, and the compile pool's programs. The
// loop reports through this interface alone: the run's timers (TuneSummary's seconds), the
// progress line of `ktune tune`, the timeline of `--trace` (ktune/trace.h) and a program's own
// observer all receive the same calls.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ktune/backend.h"
#include "ktune/compiler.h"

namespace ktune {

using RunClock = std::chrono::steady_clock;

// Progress, reported after every trial.
struct Progress {
  std::uint64_t done = 0;   // trials told (measured + answered from the database)
  std::uint64_t total = 0;  // budget or space size, whichever is smaller
  std::uint64_t measured = 0;
  double elapsed_seconds = 0;
  std::optional<double> best_ms;
  std::string best_key;
  double best_gbps = 0;  // NaN when the kernel declares no bytes
  std::string phase;     // empty while searching; then what the run does after the search
};

// What the loop spent a span of its time on.
enum class Activity {
  kStrategy,     // inside the strategy's ask() and tell()
  kStore,        // in the results database: claims, look-ups, trials
  kBackend,      // inside the backend's submit() and collect()
  kWaitCompile,  // waiting for a compilation while the backend could take work
  kWaitClaim,    // waiting for a configuration another process is measuring
  kWaitPrepare,  // waiting for the backend's preparation with work to submit
};

// The parts of a run: the search, the finalists' re-timing, and what follows (the best and its
// binary stored, the run's record).
enum class RunPhase { kSearch, kRetime, kFinish };

// Every call has a default that does nothing, so an observer overrides what it needs. All calls
// but compiled() come from the thread that runs the loop; compiled() comes from the compile
// pool's threads, concurrently.
class RunObserver {
 public:
  virtual ~RunObserver() = default;
  // After every trial told to the strategy, and once when a phase after the search begins.
  virtual void progress(const Progress& progress) { (void)progress; }
  virtual void activity(Activity what, RunClock::time_point begin, RunClock::time_point end) {
    (void)what, (void)begin, (void)end;
  }
  // The backend's preparation (the CUDA backend: the worker, the inputs, the reference) and its
  // steps in seconds, once the loop first needed it.
  virtual void prepared(RunClock::time_point begin, RunClock::time_point end,
                        const std::map<std::string, double>& steps) {
    (void)begin, (void)end, (void)steps;
  }
  // A measurement the backend returned: the configuration was given to it at `submitted` and
  // its result came back at `collected`; `cubin_bytes` is 0 where nothing was compiled.
  virtual void measured(const std::string& key, const Measurement& m, std::size_t cubin_bytes,
                        RunClock::time_point submitted, RunClock::time_point collected) {
    (void)key, (void)m, (void)cubin_bytes, (void)submitted, (void)collected;
  }
  // The number of measurements on the backend changed.
  virtual void in_flight(std::size_t count, RunClock::time_point at) { (void)count, (void)at; }
  // A phase of the run ended; `finalists` is how many the re-timing took.
  virtual void phase(RunPhase phase, RunClock::time_point begin, RunClock::time_point end,
                     std::size_t finalists) {
    (void)phase, (void)begin, (void)end, (void)finalists;
  }
  // One program of the compile pool (or cache hits only), from the pool's thread.
  virtual void compiled(const CompileBatchRecord& record) { (void)record; }
};

// Several observers as one, called in the order added; the observers must outlive it.
class RunObservers final : public RunObserver {
 public:
  void add(RunObserver* observer) {
    if (observer) observers_.push_back(observer);
  }
  bool empty() const { return observers_.empty(); }
  void progress(const Progress& p) override {
    for (auto* o : observers_) o->progress(p);
  }
  void activity(Activity what, RunClock::time_point begin, RunClock::time_point end) override {
    for (auto* o : observers_) o->activity(what, begin, end);
  }
  void prepared(RunClock::time_point begin, RunClock::time_point end,
                const std::map<std::string, double>& steps) override {
    for (auto* o : observers_) o->prepared(begin, end, steps);
  }
  void measured(const std::string& key, const Measurement& m, std::size_t cubin_bytes,
                RunClock::time_point submitted, RunClock::time_point collected) override {
    for (auto* o : observers_) o->measured(key, m, cubin_bytes, submitted, collected);
  }
  void in_flight(std::size_t count, RunClock::time_point at) override {
    for (auto* o : observers_) o->in_flight(count, at);
  }
  void phase(RunPhase p, RunClock::time_point begin, RunClock::time_point end,
             std::size_t finalists) override {
    for (auto* o : observers_) o->phase(p, begin, end, finalists);
  }
  void compiled(const CompileBatchRecord& record) override {
    for (auto* o : observers_) o->compiled(record);
  }

 private:
  std::vector<RunObserver*> observers_;
};

// An observer of progress alone, from a function.
class ProgressObserver final : public RunObserver {
 public:
  explicit ProgressObserver(std::function<void(const Progress&)> fn) : fn_(std::move(fn)) {}
  void progress(const Progress& p) override {
    if (fn_) fn_(p);
  }

 private:
  std::function<void(const Progress&)> fn_;
};

}  // namespace ktune
