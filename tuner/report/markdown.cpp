// Reports: the Markdown summary, the same sections as the HTML page with tables in place of
// plots (GitHub-flavoured: pipe tables, <details> for logs). Deterministic for a given
// database and options, so tests compare it with a golden file.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "report/internal.h"

namespace ktune {

using namespace report_detail;

namespace {

std::string row(const std::vector<std::string>& cells) {
  std::string o = "|";
  for (const auto& c : cells) o += " " + c + " |";
  return o + "\n";
}

// Header row and alignment row; a leading '>' in a name right-aligns the column.
std::string header(const std::vector<std::string>& names) {
  std::string h = "|", a = "|";
  for (const auto& n : names) {
    const bool right = !n.empty() && n[0] == '>';
    h += " " + md_escape(right ? n.substr(1) : n) + " |";
    a += right ? " ---: |" : " --- |";
  }
  return h + "\n" + a + "\n";
}

std::string code(const std::string& s) { return "`" + md_escape(s) + "`"; }

std::string date_only(const std::string& iso) {
  return iso.size() >= 19 ? iso.substr(0, 10) + " " + iso.substr(11, 8) : iso;
}

std::string int_or_dash(int v) { return v < 0 ? "-" : fmt::format("{}", v); }

std::string shared_bytes(const TrialRecord& t) {
  if (t.static_shared_bytes < 0 && t.dynamic_shared_bytes < 0) return "-";
  return fmt::format("{}",
                     std::max(t.static_shared_bytes, 0) + std::max(t.dynamic_shared_bytes, 0));
}

void runs(std::string& o, const ReportStudy& s) {
  double typical = NAN;
  for (const auto& r : s.runs)
    if (!r.improvements.empty()) typical = r.improvements.back().second;
  const TimeUnit unit = time_unit_for(typical);
  o += "### Runs and convergence\n\n";
  o += header({"run", "strategy", "device", "status", "started (UTC)", ">duration", ">evaluations",
               ">ok", ">failed", fmt::format(">best ({})", unit.name), ">evals to within 10%",
               ">evals to within 1%", ">re-timed"});
  for (const ReportRun& r : s.runs) {
    const std::size_t ok =
        r.by_status.count(TrialStatus::kOk) ? r.by_status.at(TrialStatus::kOk) : 0;
    const double best = r.improvements.empty() ? NAN : r.improvements.back().second;
    o += row({fmt::format("#{}", r.run.id), md_escape(r.run.strategy_text()),
              md_escape(r.device.name), std::string(to_string(r.run.status)),
              date_only(r.run.started_at), format_duration(r.duration_s),
              fmt::format("{}", r.search.size()), fmt::format("{}", ok),
              fmt::format("{}", r.search.size() - ok), format_time(best, unit),
              r.evals_to_10pct ? fmt::format("{}", r.evals_to_10pct) : "-",
              r.evals_to_1pct ? fmt::format("{}", r.evals_to_1pct) : "-",
              fmt::format("{}", r.retimed.size())});
  }
  if (std::any_of(s.runs.begin(), s.runs.end(),
                  [](const ReportRun& r) { return !r.clocks.empty(); })) {
    o += "\nGPU clocks under load (NVML; a clock below the highest: a power or thermal limit):\n\n";
    for (const ReportRun& r : s.runs)
      if (!r.clocks.empty()) o += fmt::format("- #{}: {}\n", r.run.id, md_escape(r.clocks));
  }
  o += "\nImprovements of the best-so-far (evaluation: time, wall time since the run's start):\n\n";
  for (const ReportRun& r : s.runs) {
    o += fmt::format("- {}:", r.label);
    if (r.improvements.empty()) o += " no ok evaluation";
    std::size_t shown = 0;
    constexpr std::size_t kMax = 12;
    for (std::size_t i = 0; i < r.improvements.size(); ++i) {
      // The first, the last and up to kMax in between.
      if (r.improvements.size() > kMax && i > 0 && i + 1 < r.improvements.size() &&
          i % ((r.improvements.size() + kMax - 1) / kMax) != 0)
        continue;
      const auto& [k, best] = r.improvements[i];
      const double e = r.elapsed_s[k];
      o += fmt::format("{} {}: {}{}", shown++ ? "," : "", k + 1, format_time_auto(best),
                       std::isfinite(e) ? " @ " + format_duration(e) : "");
    }
    o += "\n";
  }
  o += "\n";
}

void effects(std::string& o, const DeviceAnalysis& a) {
  if (a.effects.empty() || a.distinct_ok == 0) {
    o += "No ok trials: nothing to compare.\n\n";
    return;
  }
  double sum = 0;
  for (const auto& e : a.effects) sum += e.importance;
  o += fmt::format(
      "Importance: the share of the variance of ln(time) over the {} ok distinct configurations "
      "explained by each "
      "parameter's per-value means (correlation ratio eta^2, a first-order fANOVA-style main "
      "effect; see "
      "docs/reports.md). All main effects together (additive model) explain {}; interactions and "
      "noise: {}.",
      a.distinct_ok, format_percent(a.explained), format_percent(std::max(0.0, 1 - a.explained)));
  if (sum > a.explained + 0.02)
    o += fmt::format(
        " The shares add up to {}: parameters are correlated in this data, so they overlap.",
        format_percent(sum));
  o += "\n\n";
  double typical = NAN;
  if (a.best) typical = a.best->time_ms;
  const TimeUnit unit = time_unit_for(typical);
  o += header({"parameter", ">importance", "best value",
               "per value: median " + std::string(unit.name) + " (ok/tried)"});
  for (const auto& e : a.effects) {
    std::string values;
    for (const auto& v : e.values) {
      if (!values.empty()) values += ", ";
      values += fmt::format("{}: {} ({}/{})", v.value, format_time(v.median_ms, unit),
                            v.times_ms.size(), v.trials);
    }
    o += row({code(e.name), format_percent(e.importance), code(e.best_value), md_escape(values)});
  }
  o += "\n";
}

void top(std::string& o, const DeviceAnalysis& a) {
  if (a.top.empty()) return;
  const TimeUnit unit = time_unit_for(a.top.front().trial.time_ms);
  bool gflops = false, gbps = false, retimed = false;
  for (const auto& c : a.top) {
    gflops = gflops || std::isfinite(c.trial.gflops);
    gbps = gbps || std::isfinite(c.trial.gbps);
    retimed = retimed || c.retimed_ms.has_value();
  }
  std::vector<std::string> names = {">#",   "configuration", fmt::format(">median ({})", unit.name),
                                    ">min", ">spread",       ">samples"};
  if (retimed) names.push_back(fmt::format(">re-timed ({})", unit.name));
  if (gbps) names.push_back(">GB/s");
  if (gflops) names.push_back(">GFLOP/s");
  for (const char* n :
       {">registers", ">shared (B)", ">spill (B)", ">local (B)", ">occupancy", ">trial"})
    names.push_back(n);
  o += header(names);
  for (const auto& c : a.top) {
    const TrialRecord& t = c.trial;
    std::vector<std::string> cells = {fmt::format("{}{}", c.rank, c.is_best ? " **best**" : ""),
                                      code(t.config_key),
                                      format_time(t.time_ms, unit),
                                      format_time(t.time_min_ms, unit),
                                      format_percent(t.time_spread),
                                      fmt::format("{}", t.sample_count)};
    if (retimed) cells.push_back(c.retimed_ms ? format_time(*c.retimed_ms, unit) : "-");
    if (gbps) cells.push_back(format_number(t.gbps, 4));
    if (gflops) cells.push_back(format_number(t.gflops, 4));
    cells.push_back(int_or_dash(t.registers));
    cells.push_back(shared_bytes(t));
    cells.push_back(int_or_dash(t.spill_bytes));
    cells.push_back(int_or_dash(t.local_bytes));
    cells.push_back(t.occupancy >= 0 ? format_percent(t.occupancy, 0) : "-");
    cells.push_back(fmt::format("{}", t.id));
    o += row(cells);
  }
  o += "\n";
  if (!a.finalists.empty()) {
    const double fastest = a.finalists.front().time_ms;
    o += fmt::format(
        "Final interleaved re-timing of the leaders (run #{}; not search evaluations; half of "
        "the rounds ranked them, the other half timed them; **best**: the one ranked fastest):\n\n",
        a.finalists.front().run_id);
    o += header({">#", "configuration", fmt::format(">re-timed ({})", unit.name), ">spread",
                 ">rounds", ">vs fastest"});
    for (std::size_t i = 0; i < a.finalists.size(); ++i) {
      const TrialRecord& t = a.finalists[i];
      const bool best = a.is_stored_best(t);
      o += row({fmt::format("{}", i + 1), code(t.config_key) + (best ? " **best**" : ""),
                format_time(t.time_ms, unit), format_percent(t.time_spread),
                fmt::format("{}", t.sample_count),
                fastest > 0 ? "+" + format_percent(t.time_ms / fastest - 1) : "-"});
    }
    o += "\n";
  }
}

void failures(std::string& o, const DeviceAnalysis& a) {
  std::string counts;
  for (const auto& [s, n] : a.by_status)
    counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", to_string(s), n);
  o += "Trials by status: " + counts + ".\n\n";
  if (a.failures.empty()) return;
  o += header({"status", "reason", ">trials"});
  for (const FailureGroup& g : a.failures)
    o += row(
        {code(std::string(to_string(g.status))), md_escape(g.reason), fmt::format("{}", g.count)});
  o += "\n";
  for (const FailureGroup& g : a.failures) {
    bool any_log = false;
    for (const auto& t : g.examples)
      any_log = any_log || !t.compile_log.empty() || t.error.find('\n') != std::string::npos;
    if (!any_log) continue;
    o += fmt::format("<details><summary>{}: {} (first {} of {})</summary>\n\n", to_string(g.status),
                     md_escape(g.reason), g.examples.size(), g.count);
    for (const TrialRecord& t : g.examples) {
      o += fmt::format("trial {} `{}`\n\n```\n", t.id, t.config_key);
      constexpr std::size_t kMax = 4000;
      const std::string& log = t.compile_log.empty() ? t.error : t.compile_log;
      o += log.size() > kMax ? log.substr(0, kMax) + "\n[cut; the database has all of it]" : log;
      if (!o.empty() && o.back() != '\n') o += "\n";
      o += "```\n\n";
    }
    o += "</details>\n\n";
  }
}

void cross(std::string& o, const CrossDevice& x) {
  const std::size_t n = x.devices.size();
  const TimeUnit unit = time_unit_for(x.best.front().time_ms);
  o += "### Across devices\n\n";
  o += header({"device", "arch", "best configuration", fmt::format(">time ({})", unit.name),
               ">GB/s", "source"});
  for (std::size_t i = 0; i < n; ++i) {
    const TrialRecord& b = x.best[i];
    o += row({md_escape(x.devices[i].name), x.devices[i].arch, code(b.config_key),
              format_time(b.time_ms, unit), format_number(b.gbps, 4),
              x.best_is_stored[i] ? fmt::format("stored best (trial {})", b.id)
                                  : fmt::format("fastest trial {}", b.id)});
  }
  o += "\nThe best of one device (row) measured on another (column), and the ratio to that "
       "device's own best:\n\n";
  std::vector<std::string> names = {"best of \\ on"};
  for (const auto& d : x.devices) names.push_back(">" + d.name);
  o += header(names);
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<std::string> cells = {md_escape(x.devices[i].name)};
    for (std::size_t j = 0; j < n; ++j)
      cells.push_back(x.time_ms[i][j]
                          ? fmt::format("{} ({}x)", format_time(*x.time_ms[i][j], unit),
                                        format_number(*x.time_ms[i][j] / x.best[j].time_ms, 3))
                          : "not measured");
    o += row(cells);
  }
  o += "\n";
}

void provenance(std::string& o, const ReportStudy& s) {
  o += "### Provenance\n\n";
  o += header({"run", "device", "driver", "NVRTC", "ktune", "source hash", "space hash", "host",
               "started (UTC)", "finished (UTC)", "backend", ">seed", "budget", "command"});
  for (const ReportRun& r : s.runs) {
    const DeviceRecord& d = r.device;
    o += row({fmt::format("#{}", r.run.id),
              md_escape(fmt::format("{} ({}, {} SMs, {})", d.name, d.arch, d.sm_count,
                                    format_bytes(d.memory_bytes))),
              format_driver(r.run.driver_version ? r.run.driver_version : d.driver_version),
              md_escape(r.run.nvrtc_version.empty() ? d.nvrtc_version : r.run.nvrtc_version),
              md_escape(r.run.ktune_version), code(r.kernel.source_hash.substr(0, 12)),
              code(r.kernel.space_hash.substr(0, 12)), md_escape(r.run.host),
              date_only(r.run.started_at), date_only(r.run.finished_at), md_escape(r.run.backend),
              fmt::format("{}", r.run.seed), code(r.run.budget),
              r.run.command_line.empty() ? "-" : code(r.run.command_line)});
  }
  o += "\n";
}

void family(std::string& o, const ReportFamily& f) {
  const Selector& sel = f.selector.selector;
  o += fmt::format("\n## {}: family of {} sizes on {}\n\n", f.kernel_name, f.rows.size(),
                   f.device.name);
  o += fmt::format("Selector {} ({}{}): {} candidates measured at every size.", f.selector.id,
                   sel.method, f.selector.replayed ? ", from replayed runs" : "",
                   sel.candidates.size());
  if (!sel.held_out.empty())
    o += fmt::format(
        " Each size left out, its pick there reached {:.3f} of the best on average, {:.3f} at "
        "worst.",
        sel.held_out_mean(), sel.held_out_worst());
  o += "\n\n| problem | best | its configuration | pick held out | its speed / best |\n"
       "|---|---|---|---|---|\n";
  for (const auto& r : f.rows)
    o += fmt::format(
        "| {} | {} | {} | {} | {} |\n", md_escape(r.problem_key), format_time_auto(r.best_ms),
        code(r.best_key), r.held_out_key.empty() ? "-" : code(r.held_out_key),
        std::isfinite(r.held_out_performance) ? fmt::format("{:.3f}", r.held_out_performance)
                                              : "-");
}

}  // namespace

std::string render_markdown(const Report& report) {
  const ReportOptions& opt = report.options;
  std::string o;
  std::size_t n_runs = 0;
  for (const auto& s : report.studies) n_runs += s.runs.size();
  o += "# " + opt.title + "\n\n";
  o += fmt::format("{} · {} run{} · {} trials · generated {} by ktune {}\n",
                   opt.database.empty() ? "database" : opt.database, n_runs, n_runs == 1 ? "" : "s",
                   report.trials, date_only(report.generated_at), KTUNE_VERSION);
  if (!opt.command_line.empty()) o += "\nCommand: " + code(opt.command_line) + "\n";
  for (const ReportStudy& s : report.studies) {
    o += fmt::format("\n## {} [{}]\n\n", s.kernel_name, s.problem_key);
    for (const DeviceAnalysis& a : s.devices) {
      if (!a.best) continue;
      o += fmt::format("Best on {}: {} {}{} ({})\n", a.device.name, code(a.best->config_key),
                       format_time_auto(a.best->time_ms),
                       std::isfinite(a.best->gbps)
                           ? fmt::format(", {} GB/s", format_number(a.best->gbps, 4))
                           : "",
                       a.best_is_stored ? "stored best" : "fastest trial; no stored best");
    }
    o += "\n";
    runs(o, s);
    for (const DeviceAnalysis& a : s.devices) {
      const std::string on = s.devices.size() > 1 ? " on " + a.device.name : "";
      o += fmt::format("### Parameter effects{}\n\n", on);
      o += fmt::format("{} evaluations, {} distinct configurations, {} of them ok.\n\n",
                       a.evaluations, a.distinct, a.distinct_ok);
      effects(o, a);
      o += fmt::format("### Top configurations{}\n\n", on);
      top(o, a);
      if (!a.pareto.empty()) {
        o += fmt::format("### Time-energy Pareto set{}\n\n", on);
        o += fmt::format("{} configurations with an energy; these {} no other beats in both:\n\n",
                         a.with_energy.size(), a.pareto.size());
        o += "| time (ms) | energy (mJ) | power (W) | configuration |\n| --- | --- | --- | --- |\n";
        for (const TrialRecord& t : a.pareto)
          o += fmt::format("| {} | {} | {} | `{}` |\n", format_number(t.time_ms, 4),
                           format_number(t.energy_j * 1e3, 4), format_number(t.power_w, 3),
                           t.config_key);
        o += "\n";
      }
      o += fmt::format("### Failures{}\n\n", on);
      failures(o, a);
    }
    if (s.cross) cross(o, *s.cross);
    provenance(o, s);
  }
  for (const ReportFamily& f : report.families) family(o, f);
  return o;
}

}  // namespace ktune
