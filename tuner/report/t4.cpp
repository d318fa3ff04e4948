// T4 export (ktune/t4.h): one run of the results database as Kernel Tuner's T4 results and
// metadata documents. JSON has no NaN, so unmeasured values are left out, never written as
// null where the schema wants a number.
#include "ktune/t4.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "ktune/error.h"
#include "ktune/replay.h"
#include "ktune/report.h"

namespace ktune {

using nlohmann::json;

namespace {

json config_of(const TrialRecord& t) {
  json c = json::parse(t.config_json.empty() ? "{}" : t.config_json, nullptr, false);
  if (c.is_discarded() || !c.is_object()) c = json::object();
  return c;
}

void measure(json& list, const char* name, double value, const char* unit) {
  if (std::isfinite(value)) list.push_back({{"name", name}, {"value", value}, {"unit", unit}});
}
void measure_int(json& list, const char* name, int value, const char* unit) {
  if (value >= 0) list.push_back({{"name", name}, {"value", value}, {"unit", unit}});
}

json runtimes(const TrialRecord& t) {
  json r = json::array();
  for (double s : t.samples_ms)
    if (std::isfinite(s)) r.push_back(s);
  return r;
}

struct RunRows {
  RunRecord run;
  DeviceRecord device;
  KernelRecord kernel;
  ProblemRecord problem;
};

RunRows load(const Store& store, std::int64_t run_id) {
  const auto run = store.run(run_id);
  if (!run)
    throw Error(ErrorKind::kUsage, fmt::format("{}: no run {}", store.path().string(), run_id));
  RunRows r;
  r.run = *run;
  r.device = store.device(run->device_id).value_or(DeviceRecord{});
  r.kernel = store.kernel(run->kernel_id).value_or(KernelRecord{});
  r.problem = store.problem(run->problem_id).value_or(ProblemRecord{});
  return r;
}

std::string driver_text(int v) {
  return v > 0 ? fmt::format("{}.{}", v / 1000, v % 1000 / 10) : "";
}

}  // namespace

std::string_view t4_invalidity(TrialStatus status) {
  switch (status) {
    case TrialStatus::kOk:
      return "correct";
    case TrialStatus::kInvalid:
      return "constraints";
    case TrialStatus::kCompileFailed:
      return "compile";
    case TrialStatus::kLaunchFailed:
    case TrialStatus::kResourcesExceeded:
    case TrialStatus::kCrashed:
      return "runtime";
    case TrialStatus::kWrongResult:
      return "correctness";
    case TrialStatus::kTimeout:
      return "timeout";
  }
  return "runtime";
}

namespace {

json retimed_entry(const TrialRecord& t) {
  json r = {
      {"timestamp", t.created_at}, {"configuration", config_of(t)}, {"runtimes", runtimes(t)}};
  if (std::isfinite(t.time_ms)) r["time"] = t.time_ms;
  return r;
}

json trial_times(const TrialRecord& t) {
  json times = json::object();
  if (std::isfinite(t.compile_ms) && t.compile_ms > 0) times["compilation_time"] = t.compile_ms;
  times["runtimes"] = runtimes(t);
  // The evaluation's wall time less its timed samples: ktune's overhead around the kernel.
  double timed = 0;
  for (double s : t.samples_ms)
    if (std::isfinite(s)) timed += s;
  if (std::isfinite(t.eval_ms) && t.eval_ms > 0)
    times["framework"] = std::max(0.0, t.eval_ms - timed);
  return times;
}

json trial_measurements(const TrialRecord& t) {
  json m = json::array();
  if (t.status == TrialStatus::kOk && std::isfinite(t.time_ms))
    m.push_back({{"name", "time"}, {"value", t.time_ms}, {"unit", "ms"}});
  else
    m.push_back({{"name", "time"}, {"value", kernel_tuner_error(t.status)}, {"unit", "ms"}});
  if (t.status == TrialStatus::kOk) {
    measure(m, "time_min", t.time_min_ms, "ms");
    measure(m, "time_mean", t.time_mean_ms, "ms");
    measure(m, "time_spread", t.time_spread, "");
    measure(m, "GB/s", t.gbps, "GB/s");
    measure(m, "GFLOP/s", t.gflops, "GFLOP/s");
  }
  measure_int(m, "registers", t.registers, "");
  measure_int(m, "local_bytes", t.local_bytes, "B");
  measure_int(m, "spill_bytes", t.spill_bytes, "B");
  measure_int(m, "static_shared_bytes", t.static_shared_bytes, "B");
  measure_int(m, "dynamic_shared_bytes", t.dynamic_shared_bytes, "B");
  if (t.occupancy >= 0) measure(m, "occupancy", t.occupancy, "");
  m.push_back(
      {{"name", "ktune_status"}, {"value", std::string(to_string(t.status))}, {"unit", ""}});
  if (t.status != TrialStatus::kOk && !t.error.empty())
    m.push_back({{"name", "error"}, {"value", t.error}, {"unit", ""}});
  return m;
}

json result_entry(const TrialRecord& t) {
  json out;
  out["timestamp"] = t.created_at;
  out["configuration"] = config_of(t);
  out["objectives"] = json::array({"time"});
  out["times"] = trial_times(t);
  out["invalidity"] = t4_invalidity(t.status);
  // 0 only for a result that ran and was wrong; a configuration that never ran is not
  // "incorrect" (Kernel Tuner writes 1 for those too).
  out["correctness"] = t.status == TrialStatus::kWrongResult ? 0 : 1;
  out["measurements"] = trial_measurements(t);
  return out;
}

// The run's metadata; ktune's own under "ktune", the re-timings among them.
json results_metadata(const RunRows& rows, json retimed) {
  json meta;
  meta["compute_api"] = "CUDA";
  meta["platform"] =
      fmt::format("NVRTC {}", rows.run.nvrtc_version.empty() ? rows.device.nvrtc_version
                                                             : rows.run.nvrtc_version);
  meta["device"] = rows.device.name;
  meta["autotuner"] = "ktune";
  meta["autotuner_version"] = rows.run.ktune_version;
  meta["timestamp"] = rows.run.started_at;
  meta["timeunit"] = "milliseconds";
  json problem = json::parse(rows.problem.json.empty() ? "{}" : rows.problem.json, nullptr, false);
  json spec =
      json::parse(rows.kernel.spec_json.empty() ? "{}" : rows.kernel.spec_json, nullptr, false);
  json strategy_options = json::parse(
      rows.run.strategy_options.empty() ? "{}" : rows.run.strategy_options, nullptr, false);
  json budget = json::parse(rows.run.budget.empty() ? "{}" : rows.run.budget, nullptr, false);
  meta["ktune"] = {
      {"run_id", rows.run.id},
      {"kernel", rows.kernel.name},
      {"source_hash", rows.kernel.source_hash},
      {"space_hash", rows.kernel.space_hash},
      {"problem", problem.is_discarded() ? json(rows.problem.key) : problem},
      {"parameters",
       !spec.is_discarded() && spec.contains("parameters") ? spec["parameters"] : json::array()},
      {"arch", rows.device.arch},
      {"driver_version", driver_text(rows.run.driver_version)},
      {"strategy", rows.run.strategy_text()},
      {"strategy_options", strategy_options.is_discarded() ? json::object() : strategy_options},
      {"budget", budget.is_discarded() ? json::object() : budget},
      {"seed", rows.run.seed},
      {"backend", rows.run.backend},
      {"status", to_string(rows.run.status)},
      {"started_at", rows.run.started_at},
      {"finished_at", rows.run.finished_at},
      {"host", rows.run.host},
      {"command_line", rows.run.command_line},
      {"retimed", std::move(retimed)},
  };
  return meta;
}

}  // namespace

std::string t4_results(const Store& store, std::int64_t run_id) {
  const RunRows rows = load(store, run_id);
  json results = json::array();
  json retimed = json::array();
  for (const TrialRecord& t : store.trials_of_run(run_id)) {
    if (is_retimed(t))
      retimed.push_back(retimed_entry(t));
    else
      results.push_back(result_entry(t));
  }
  json doc;
  doc["schema_version"] = kT4SchemaVersion;
  doc["metadata"] = results_metadata(rows, std::move(retimed));
  doc["results"] = std::move(results);
  return doc.dump(1) + "\n";
}

std::string t4_metadata(const Store& store, std::int64_t run_id) {
  const RunRows rows = load(store, run_id);
  const DeviceRecord& d = rows.device;
  json device = {
      {"name", d.name},
      {"arch", d.arch},
      {"compute_capability", fmt::format("{}.{}", d.cc_major, d.cc_minor)},
      {"multiprocessors", d.sm_count},
      {"memory_bytes", d.memory_bytes},
      {"l2_bytes", d.l2_bytes},
      {"driver_version",
       driver_text(rows.run.driver_version ? rows.run.driver_version : d.driver_version)},
      {"nvrtc_version", rows.run.nvrtc_version.empty() ? d.nvrtc_version : rows.run.nvrtc_version}};
  json meta;
  meta["hardware"] = {
      {"hardware_description",
       json::array({{{"class", "display"}, {"product", d.name}, {"host", rows.run.host}}})}};
  meta["environment"] = {
      {"device_query", {{"ktune", device}}},
      {"requirements",
       json::array({fmt::format("ktune=={}", rows.run.ktune_version),
                    fmt::format("nvrtc=={}", device["nvrtc_version"].get<std::string>())})}};
  json doc;
  doc["schema_version"] = kT4SchemaVersion;
  doc["metadata"] = std::move(meta);
  return doc.dump(1) + "\n";
}

}  // namespace ktune
