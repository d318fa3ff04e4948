// Trace (ktune/trace.h): events kept in memory, written once at the end of the run; and the run
// observer that draws a run on it.
#include "ktune/trace.h"

#include <fmt/format.h>

#include <algorithm>

#include "ktune/replay.h"

namespace ktune {

namespace {
constexpr int kPid = 1;  // one process in the file: the tuning run
}  // namespace

double Trace::micros(Clock::time_point t) const {
  return std::chrono::duration<double, std::micro>(t - origin_).count();
}

int Trace::lane_id(const std::string& lane) {
  const auto [it, added] = lanes_.emplace(lane, static_cast<int>(lane_order_.size()) + 1);
  if (added) lane_order_.push_back(lane);
  return it->second;
}

void Trace::span(const std::string& lane, const std::string& name, Clock::time_point begin,
                 Clock::time_point end, nlohmann::json args) {
  if (end < begin) end = begin;
  nlohmann::json e = {{"name", name},
                      {"ph", "X"},
                      {"pid", kPid},
                      {"ts", micros(begin)},
                      {"dur", std::chrono::duration<double, std::micro>(end - begin).count()}};
  if (!args.empty()) e["args"] = std::move(args);
  std::lock_guard lock(mutex_);
  e["tid"] = lane_id(lane);
  events_.push_back(std::move(e));
}

void Trace::counter(const std::string& name, Clock::time_point at, double value) {
  nlohmann::json e = {{"name", name}, {"ph", "C"},        {"pid", kPid},
                      {"tid", 0},     {"ts", micros(at)}, {"args", {{"value", value}}}};
  std::lock_guard lock(mutex_);
  events_.push_back(std::move(e));
}

std::size_t Trace::size() const {
  std::lock_guard lock(mutex_);
  return events_.size();
}

nlohmann::json Trace::to_json() const {
  std::lock_guard lock(mutex_);
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", kPid},
                    {"tid", 0},
                    {"args", {{"name", "ktune tune"}}}});
  for (std::size_t i = 0; i < lane_order_.size(); ++i) {
    const int tid = static_cast<int>(i) + 1;
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", kPid},
                      {"tid", tid},
                      {"args", {{"name", lane_order_[i]}}}});
    events.push_back({{"name", "thread_sort_index"},
                      {"ph", "M"},
                      {"pid", kPid},
                      {"tid", tid},
                      {"args", {{"sort_index", tid}}}});
  }
  for (const auto& e : events_) events.push_back(e);
  return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
}

void Trace::write(const std::filesystem::path& path) const {
  write_maybe_gzip(path.string(), to_json().dump() + "\n");
}

namespace {
// The rows of a run's timeline.
constexpr const char* kRunLane = "run";
constexpr const char* kLoopLane = "loop: waiting";
constexpr const char* kGpuLane = "GPU worker";
}  // namespace

void TraceObserver::activity(Activity what, RunClock::time_point begin, RunClock::time_point end) {
  if (what == Activity::kWaitCompile && end - begin >= std::chrono::microseconds(50))
    trace_->span(kLoopLane, "compilation", begin, end);
  else if (what == Activity::kWaitPrepare && end > begin)
    trace_->span(kLoopLane, "preparation", begin, end);
}

void TraceObserver::prepared(RunClock::time_point begin, RunClock::time_point end,
                             const std::map<std::string, double>& steps) {
  nlohmann::json phases = nlohmann::json::object();
  for (const auto& [step, seconds] : steps) phases[step] = seconds;
  trace_->span(kGpuLane, "prepare", begin, end, std::move(phases));
}

void TraceObserver::measured(const std::string& key, const Measurement& m, std::size_t cubin_bytes,
                             RunClock::time_point submitted, RunClock::time_point collected) {
  // The backend measures in the order it was given: this trial began when it was submitted or
  // when the one before it came back, whichever is later.
  const auto began = std::max(submitted, gpu_free_);
  gpu_free_ = collected;
  nlohmann::json args = {{"status", std::string(to_string(m.status))},
                         {"time_ms", m.time_ms},
                         {"gpu_ms", m.gpu_ms},
                         {"timed_ms", m.timed_ms},
                         {"eval_ms", m.eval_ms}};
  if (cubin_bytes > 0) args["cubin_bytes"] = cubin_bytes;
  for (const auto& [phase, ms] : m.phases_ms) args["phase_" + phase + "_ms"] = ms;
  trace_->span(kGpuLane, key, began, collected, std::move(args));
}

void TraceObserver::in_flight(std::size_t count, RunClock::time_point at) {
  trace_->counter("measurements in flight", at, static_cast<double>(count));
}

void TraceObserver::phase(RunPhase phase, RunClock::time_point begin, RunClock::time_point end,
                          std::size_t finalists) {
  switch (phase) {
    case RunPhase::kSearch:
      trace_->span(kRunLane, "search", begin, end);
      break;
    case RunPhase::kRetime:
      if (finalists > 0)
        trace_->span(kRunLane, "re-time the finalists", begin, end, {{"finalists", finalists}});
      break;
    case RunPhase::kFinish:
      // After the search: the finalists, the best and its CUBIN stored, the run's record.
      trace_->span(kRunLane, "the best and the run's record", begin, end);
      break;
  }
}

void TraceObserver::compiled(const CompileBatchRecord& r) {
  const std::string name = r.compiled == 0   ? fmt::format("{} from the cache", r.requests)
                           : r.requests == 1 ? std::string("1 configuration")
                                             : fmt::format("{} configurations", r.requests);
  trace_->span(fmt::format("compile {}", r.thread + 1), name, r.begin, r.end,
               {{"configurations", r.requests}, {"compiled", r.compiled}, {"failed", r.failed}});
}

}  // namespace ktune
