// The report as JSON (`ktune report --json`): the same analysis as the HTML and Markdown
// renderers, as data.
#include <cmath>
#include <nlohmann/json.hpp>

#include "ktune/report.h"

namespace ktune {

namespace {

using nlohmann::json;

json number(double v) { return std::isfinite(v) ? json(v) : json(); }

json trial_json(const TrialRecord& t) {
  return {{"trial_id", t.id},         {"run_id", t.run_id},
          {"config", t.config_key},   {"time_ms", number(t.time_ms)},
          {"gbps", number(t.gbps)},   {"spread", number(t.time_spread)},
          {"samples", t.sample_count}};
}

json run_json(const ReportRun& r) {
  std::size_t ok = 0;
  for (const auto& [status, n] : r.by_status) ok += status == TrialStatus::kOk ? n : 0;
  json j = {{"run_id", r.run.id},
            {"strategy", r.run.strategy},
            {"strategy_chosen", r.run.strategy_chosen},
            {"device", r.device.name},
            {"arch", r.device.arch},
            {"backend", r.run.backend},
            {"replayed", r.run.replayed},
            {"status", to_string(r.run.status)},
            {"started_at", r.run.started_at},
            {"duration_s", number(r.duration_s)},
            {"evaluations", r.search.size()},
            {"ok", ok},
            {"failed", r.search.size() - ok},
            {"retimed", r.retimed.size()},
            {"evals_to_10pct", r.evals_to_10pct},
            {"evals_to_1pct", r.evals_to_1pct}};
  if (!r.improvements.empty()) j["best_ms"] = r.improvements.back().second;
  if (!r.clocks.empty()) j["gpu_clocks"] = r.clocks;
  return j;
}

json device_json(const DeviceAnalysis& a) {
  json j = {
      {"device", a.device.name},         {"arch", a.device.arch},  {"runs", a.run_ids},
      {"evaluations", a.evaluations},    {"distinct", a.distinct}, {"distinct_ok", a.distinct_ok},
      {"explained", number(a.explained)}};
  if (a.best) {
    j["best"] = trial_json(*a.best);
    j["best"]["stored"] = a.best_is_stored;
  }
  if (!a.with_energy.empty()) j["with_energy"] = a.with_energy.size();
  for (const TrialRecord& t : a.pareto)
    j["pareto"].push_back({{"key", t.config_key},
                           {"time_ms", number(t.time_ms)},
                           {"energy_j", number(t.energy_j)},
                           {"power_w", number(t.power_w)}});
  for (const ParameterEffect& e : a.effects)
    j["parameters"].push_back(
        {{"name", e.name}, {"importance", number(e.importance)}, {"best_value", e.best_value}});
  for (const TopConfig& t : a.top) {
    json row = trial_json(t.trial);
    row["rank"] = t.rank;
    row["retimed_ms"] = t.retimed_ms ? json(*t.retimed_ms) : json();
    row["best"] = t.is_best;
    j["top"].push_back(row);
  }
  for (const FailureGroup& g : a.failures)
    j["failures"].push_back(
        {{"status", to_string(g.status)}, {"reason", g.reason}, {"count", g.count}});
  return j;
}

}  // namespace

std::string render_json(const Report& report) {
  json j;
  j["title"] = report.options.title;
  j["database"] = report.options.database;
  j["generated_at"] = report.generated_at;
  j["trials"] = report.trials;
  j["studies"] = json::array();
  for (const ReportStudy& s : report.studies) {
    json study = {{"kernel", s.kernel_name},
                  {"problem", s.problem_key},
                  {"runs", json::array()},
                  {"devices", json::array()}};
    for (const ReportRun& r : s.runs) study["runs"].push_back(run_json(r));
    for (const DeviceAnalysis& a : s.devices) study["devices"].push_back(device_json(a));
    j["studies"].push_back(std::move(study));
  }
  j["families"] = json::array();
  for (const ReportFamily& f : report.families) {
    json family = {{"kernel", f.kernel_name},
                   {"device", f.device.name},
                   {"selector", f.selector.id},
                   {"size", f.size_name},
                   {"sizes", json::array()}};
    for (const auto& r : f.rows)
      family["sizes"].push_back(
          {{"problem", r.problem_key},
           {"best_ms", std::isfinite(r.best_ms) ? json(r.best_ms) : json()},
           {"best", r.best_key},
           {"held_out_pick", r.held_out_key},
           {"held_out_performance",
            std::isfinite(r.held_out_performance) ? json(r.held_out_performance) : json()}});
    j["families"].push_back(std::move(family));
  }
  return j.dump(2) + "\n";
}

}  // namespace ktune
