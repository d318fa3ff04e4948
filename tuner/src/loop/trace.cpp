// Trace (ktune/trace.h): events kept in memory, written once at the end of the run.
#include "ktune/trace.h"

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

}  // namespace ktune
