// Reports, part 1: selecting runs from the database and analysing them (convergence,
// parameter effects and importance, top configurations, failures, cross-device comparison).
// The renderers (html.cpp, markdown.cpp, json.cpp) only format what is computed here.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>

#include "ktune/error.h"
#include "ktune/report.h"
#include "ktune/run_summary.h"
#include "report/internal.h"

namespace ktune {

using nlohmann::json;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool timed_ok(const TrialRecord& t) {
  return t.status == TrialStatus::kOk && std::isfinite(t.time_ms) && t.time_ms > 0;
}

// Linear interpolation between order statistics (type 7, what numpy and R use by default).
double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return kNaN;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

std::string first_line(const std::string& text, std::size_t max_chars = 160) {
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    std::size_t lead = 0;
    while (lead < line.size() && std::isspace(static_cast<unsigned char>(line[lead]))) ++lead;
    line.erase(0, lead);
    if (!line.empty()) {
      if (line.size() > max_chars) line = line.substr(0, max_chars - 3) + "...";
      return line;
    }
    start = end + 1;
  }
  return {};
}

// The first line of the compile log that says "error", for a compile failure whose own error
// is generic.
std::string log_error_line(const std::string& log) {
  std::size_t start = 0;
  while (start < log.size()) {
    std::size_t end = log.find('\n', start);
    if (end == std::string::npos) end = log.size();
    const std::string line = log.substr(start, end - start);
    if (line.find("error") != std::string::npos) return first_line(line);
    start = end + 1;
  }
  return {};
}

std::string digits_to_n(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (std::isdigit(static_cast<unsigned char>(text[i]))) {
      while (i + 1 < text.size() &&
             (std::isdigit(static_cast<unsigned char>(text[i + 1])) || text[i + 1] == '.'))
        ++i;
      out += 'N';
    } else {
      out += text[i];
    }
  }
  return out;
}

// The database's lookups, each row read once.
class Cache {
 public:
  explicit Cache(const Store& store) : store_(store) {}
  const DeviceRecord& device(std::int64_t id) {
    auto it = devices_.find(id);
    if (it == devices_.end())
      it = devices_.emplace(id, store_.device(id).value_or(DeviceRecord{})).first;
    return it->second;
  }
  const KernelRecord& kernel(std::int64_t id) {
    auto it = kernels_.find(id);
    if (it == kernels_.end())
      it = kernels_.emplace(id, store_.kernel(id).value_or(KernelRecord{})).first;
    return it->second;
  }
  const ProblemRecord& problem(std::int64_t id) {
    auto it = problems_.find(id);
    if (it == problems_.end())
      it = problems_.emplace(id, store_.problem(id).value_or(ProblemRecord{})).first;
    return it->second;
  }
  const std::vector<TrialRecord>& trials(std::int64_t run_id) {
    auto it = trials_.find(run_id);
    if (it == trials_.end()) it = trials_.emplace(run_id, store_.trials_of_run(run_id)).first;
    return it->second;
  }

 private:
  const Store& store_;
  std::map<std::int64_t, DeviceRecord> devices_;
  std::map<std::int64_t, KernelRecord> kernels_;
  std::map<std::int64_t, ProblemRecord> problems_;
  std::map<std::int64_t, std::vector<TrialRecord>> trials_;
};

bool device_matches(const DeviceRecord& d, const std::string& want) {
  if (d.arch == want) return true;
  return lower(d.name).find(lower(want)) != std::string::npos;
}

bool problem_matches(const ProblemRecord& p, const std::map<std::string, std::int64_t>& want) {
  if (want.empty()) return true;
  json j = json::parse(p.json.empty() ? "{}" : p.json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return false;
  for (const auto& [name, value] : want) {
    if (!j.contains(name) || !j[name].is_number()) return false;
    if (j[name].get<double>() != static_cast<double>(value)) return false;
  }
  return true;
}

std::vector<RunRecord> matching_runs(const Store& store, Cache& cache, const ReportSelection& sel) {
  std::vector<RunRecord> all = store.runs(sel.kernel);
  std::set<std::int64_t> wanted(sel.runs.begin(), sel.runs.end());
  for (const std::int64_t id : wanted) {
    const bool present =
        std::any_of(all.begin(), all.end(), [&](const RunRecord& r) { return r.id == id; });
    if (!present) {
      const auto r = store.run(id);
      if (!r)
        throw Error(ErrorKind::kUsage,
                    fmt::format("--run {}: {} has no run {}", id, store.path().string(), id));
      throw Error(ErrorKind::kUsage,
                  fmt::format("--run {}: run {} tuned {}, not {}", id, id,
                              cache.kernel(r->kernel_id).name, sel.kernel.value_or("")));
    }
  }
  std::vector<RunRecord> out;
  for (auto& r : all) {
    if (!wanted.empty() && !wanted.count(r.id)) continue;
    if (sel.device && !device_matches(cache.device(r.device_id), *sel.device)) continue;
    if (!problem_matches(cache.problem(r.problem_id), sel.problem)) continue;
    out.push_back(std::move(r));
  }
  std::sort(out.begin(), out.end(),
            [](const RunRecord& a, const RunRecord& b) { return a.id < b.id; });
  if (out.empty()) {
    std::map<std::string, std::size_t> held;
    for (const auto& r : store.runs()) ++held[cache.kernel(r.kernel_id).name];
    std::string what;
    for (const auto& [name, n] : held)
      what += fmt::format("{}{} ({} run{})", what.empty() ? "" : ", ", name, n, n == 1 ? "" : "s");
    std::string filter;
    if (sel.kernel) filter += " kernel " + *sel.kernel;
    if (!sel.runs.empty()) filter += " --run";
    if (sel.device) filter += " --device-name " + *sel.device;
    if (!sel.problem.empty()) filter += " --problem";
    throw Error(ErrorKind::kUsage,
                fmt::format("{}: no run matches{}; it holds {}", store.path().string(),
                            filter.empty() ? "" : fmt::format(" ({})", filter.substr(1)),
                            what.empty() ? "no runs" : what));
  }
  return out;
}

// Parameter names in declaration order (the kernel's spec), then any others the trials have.
std::vector<std::string> parameter_order(
    const KernelRecord& kernel, std::map<std::string, std::vector<std::string>>& declared) {
  std::vector<std::string> names;
  json spec = json::parse(kernel.spec_json.empty() ? "{}" : kernel.spec_json, nullptr, false);
  if (!spec.is_discarded() && spec.is_object() && spec.contains("parameters") &&
      spec["parameters"].is_array()) {
    for (const auto& p : spec["parameters"]) {
      if (!p.is_object() || !p.contains("name")) continue;
      const std::string name = p["name"].get<std::string>();
      names.push_back(name);
      auto& values = declared[name];
      if (p.contains("values") && p["values"].is_array())
        for (const auto& v : p["values"])
          values.push_back(v.is_string() ? v.get<std::string>() : v.dump());
    }
  }
  return names;
}

}  // namespace

namespace report_detail {

std::vector<std::pair<std::string, std::string>> config_values(const TrialRecord& t) {
  std::vector<std::pair<std::string, std::string>> out;
  json j = json::parse(t.config_json.empty() ? "null" : t.config_json, nullptr, false);
  if (!j.is_discarded() && j.is_object() && !j.empty()) {
    for (const auto& [k, v] : j.items())
      out.emplace_back(k, v.is_string() ? v.get<std::string>() : v.dump());
    return out;
  }
  // No JSON: the key is name=value,... in declaration order.
  std::size_t start = 0;
  while (start < t.config_key.size()) {
    std::size_t end = t.config_key.find(',', start);
    if (end == std::string::npos) end = t.config_key.size();
    const std::string item = t.config_key.substr(start, end - start);
    const auto eq = item.find('=');
    if (eq != std::string::npos) out.emplace_back(item.substr(0, eq), item.substr(eq + 1));
    start = end + 1;
  }
  return out;
}

}  // namespace report_detail

bool is_retimed(const TrialRecord& trial) { return trial.kind == TrialKind::kRetime; }

std::optional<double> parse_utc(const std::string& iso) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0;
  double s = 0;
  char t = 0;
  if (std::sscanf(iso.c_str(), "%4d-%2d-%2d%c%2d:%2d:%lf", &y, &mo, &d, &t, &h, &mi, &s) != 7)
    return std::nullopt;
  if (t != 'T' && t != ' ') return std::nullopt;
  // Days from civil (Howard Hinnant's algorithm).
  y -= mo <= 2;
  const int era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = static_cast<unsigned>((153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1);
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const double days = static_cast<double>(era) * 146097.0 + static_cast<double>(doe) - 719468.0;
  return days * 86400.0 + h * 3600.0 + mi * 60.0 + s;
}

std::vector<std::int64_t> select_runs(const Store& store, const ReportSelection& selection) {
  Cache cache(store);
  std::vector<std::int64_t> ids;
  for (const auto& r : matching_runs(store, cache, selection)) ids.push_back(r.id);
  return ids;
}

namespace {

// The clocks of a run's summary (tuner.cpp summary_json), said in one line.
std::string run_clocks(const std::string& summary) {
  const nlohmann::json s = nlohmann::json::parse(summary, nullptr, false);
  if (!s.is_object()) return "";
  std::string out;
  const GpuClockStats search = clocks_from_json(s.value("gpu_clocks", nlohmann::json()));
  if (search.readings > 0) out = "search " + search.describe();
  const nlohmann::json retime = s.value("retime", nlohmann::json());
  if (retime.is_object()) {
    const GpuClockStats c = clocks_from_json(retime.value("gpu_clocks", nlohmann::json()));
    const double sustained = retime.value("sustain_seconds", 0.0);
    if (c.readings > 0) {
      out += out.empty() ? "" : "; ";
      out += sustained > 0 ? fmt::format("re-timed after {:.2f} s of sustained load at ", sustained)
                           : "re-timed at ";
      out += c.describe();
    }
  }
  return out;
}

ReportRun make_run(const RunRecord& r, Cache& cache) {
  ReportRun out;
  out.clocks = run_clocks(r.summary);
  out.run = r;
  out.device = cache.device(r.device_id);
  out.kernel = cache.kernel(r.kernel_id);
  out.problem = cache.problem(r.problem_id);
  const std::optional<double> t0 = parse_utc(r.started_at);
  double last = 0;
  for (const TrialRecord& t : cache.trials(r.id)) {
    if (is_retimed(t)) {
      out.retimed.push_back(t);
      continue;
    }
    out.search.push_back(t);
    const std::optional<double> tc = parse_utc(t.created_at);
    const double e = (t0 && tc) ? std::max(0.0, *tc - *t0) : kNaN;
    out.elapsed_s.push_back(e);
    if (std::isfinite(e)) last = std::max(last, e);
    ++out.by_status[t.status];
  }
  std::stable_sort(
      out.retimed.begin(), out.retimed.end(),
      [](const TrialRecord& a, const TrialRecord& b) { return a.time_ms < b.time_ms; });
  const std::optional<double> t1 = parse_utc(r.finished_at);
  out.duration_s = (t0 && t1) ? std::max(0.0, *t1 - *t0) : last;
  double best = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < out.search.size(); ++i) {
    const TrialRecord& t = out.search[i];
    if (timed_ok(t) && t.time_ms < best) {
      best = t.time_ms;
      out.improvements.emplace_back(i, best);
    }
  }
  if (!out.improvements.empty()) {
    for (const auto& [i, b] : out.improvements) {
      if (out.evals_to_10pct == 0 && b <= best * 1.10) out.evals_to_10pct = i + 1;
      if (out.evals_to_1pct == 0 && b <= best * 1.01) out.evals_to_1pct = i + 1;
    }
  }
  return out;
}

// R^2 of the additive model ln(time) = mu + sum_p beta_p[value of p], fitted by backfitting
// (each parameter's effects in turn set to the mean residual of the others, until they settle):
// what all main effects explain together. On a balanced grid it is the sum of the eta^2; where
// parameters are correlated it is less than that sum, and 1 - R^2 is interactions and noise.
double additive_r2(const std::vector<const TrialRecord*>& latest,
                   const std::vector<std::string>& params, const std::vector<double>& y,
                   double mean, double total) {
  if (total <= 0 || params.empty()) return 0;
  const std::size_t n = y.size(), P = params.size();
  // Value index of every parameter per ok row.
  std::vector<std::vector<int>> level(P, std::vector<int>(n, -1));
  std::vector<int> levels(P, 0);
  std::vector<std::map<std::string, int>> ids(P);
  std::size_t row = 0;
  for (const TrialRecord* t : latest) {
    if (!timed_ok(*t)) continue;
    for (const auto& [name, value] : report_detail::config_values(*t)) {
      const auto p =
          static_cast<std::size_t>(std::find(params.begin(), params.end(), name) - params.begin());
      if (p >= P) continue;
      auto [it, fresh] = ids[p].emplace(value, levels[p]);
      if (fresh) ++levels[p];
      level[p][row] = it->second;
    }
    ++row;
  }
  std::vector<double> fit(n, mean);  // mu + sum of effects, per row
  std::vector<std::vector<double>> beta(P);
  for (std::size_t p = 0; p < P; ++p) beta[p].assign(static_cast<std::size_t>(levels[p]), 0.0);
  for (int iteration = 0; iteration < 100; ++iteration) {
    double change = 0;
    for (std::size_t p = 0; p < P; ++p) {
      std::vector<double> sum(beta[p].size(), 0.0);
      std::vector<double> count(beta[p].size(), 0.0);
      for (std::size_t i = 0; i < n; ++i) {
        const int l = level[p][i];
        if (l < 0) continue;
        sum[static_cast<std::size_t>(l)] += y[i] - (fit[i] - beta[p][static_cast<std::size_t>(l)]);
        count[static_cast<std::size_t>(l)] += 1;
      }
      std::vector<double> delta(beta[p].size(), 0.0);
      for (std::size_t l = 0; l < beta[p].size(); ++l) {
        const double b = count[l] > 0 ? sum[l] / count[l] : 0.0;
        delta[l] = b - beta[p][l];
        change = std::max(change, std::fabs(delta[l]));
        beta[p][l] = b;
      }
      for (std::size_t i = 0; i < n; ++i)
        if (level[p][i] >= 0) fit[i] += delta[static_cast<std::size_t>(level[p][i])];
    }
    if (change < 1e-10) break;
  }
  double residual = 0;
  for (std::size_t i = 0; i < n; ++i) residual += (y[i] - fit[i]) * (y[i] - fit[i]);
  return std::clamp(1 - residual / total, 0.0, 1.0);
}

// A parameter's values in the declared order first, then the rest numerically (or as text).
std::vector<std::string> value_order(
    const std::string& name, const std::map<std::string, ValueEffect>& values,
    const std::map<std::string, std::vector<std::string>>& declared) {
  std::vector<std::string> order;
  if (auto d = declared.find(name); d != declared.end())
    for (const auto& v : d->second)
      if (values.count(v)) order.push_back(v);
  std::vector<std::string> rest;
  for (const auto& [v, _] : values)
    if (std::find(order.begin(), order.end(), v) == order.end()) rest.push_back(v);
  std::sort(rest.begin(), rest.end(), [](const std::string& x, const std::string& y) {
    char* ex = nullptr;
    char* ey = nullptr;
    const double dx = std::strtod(x.c_str(), &ex), dy = std::strtod(y.c_str(), &ey);
    if (*ex == 0 && *ey == 0 && !x.empty() && !y.empty()) return dx < dy;
    return x < y;
  });
  order.insert(order.end(), rest.begin(), rest.end());
  return order;
}

// One value's times sorted, with their quantiles and mean log.
ValueEffect value_summary(ValueEffect ve) {
  std::sort(ve.times_ms.begin(), ve.times_ms.end());
  ve.min_ms = ve.times_ms.empty() ? kNaN : ve.times_ms.front();
  ve.max_ms = ve.times_ms.empty() ? kNaN : ve.times_ms.back();
  ve.q1_ms = quantile(ve.times_ms, 0.25);
  ve.median_ms = quantile(ve.times_ms, 0.5);
  ve.q3_ms = quantile(ve.times_ms, 0.75);
  double sum = 0;
  for (double t : ve.times_ms) sum += std::log(t);
  ve.mean_log = ve.times_ms.empty() ? kNaN : sum / static_cast<double>(ve.times_ms.size());
  return ve;
}

void analyse_effects(DeviceAnalysis& a, const std::vector<const TrialRecord*>& latest,
                     const std::map<std::string, std::vector<std::string>>& declared) {
  // Values of every parameter, per distinct configuration.
  std::map<std::string, std::map<std::string, ValueEffect>> by_param;
  std::vector<double> all_logs;
  for (const TrialRecord* t : latest) {
    const bool ok = timed_ok(*t);
    if (ok) all_logs.push_back(std::log(t->time_ms));
    for (const auto& [name, value] : report_detail::config_values(*t)) {
      ValueEffect& v = by_param[name][value];
      v.value = value;
      ++v.trials;
      if (ok)
        v.times_ms.push_back(t->time_ms);
      else
        ++v.failed;
    }
  }
  for (const auto& [name, values] : by_param)
    if (std::find(a.params.begin(), a.params.end(), name) == a.params.end())
      a.params.push_back(name);

  double mean = 0;
  for (double y : all_logs) mean += y;
  mean = all_logs.empty() ? 0 : mean / static_cast<double>(all_logs.size());
  double total = 0;
  for (double y : all_logs) total += (y - mean) * (y - mean);

  for (const std::string& name : a.params) {
    auto it = by_param.find(name);
    if (it == by_param.end()) continue;
    ParameterEffect e;
    e.name = name;
    double between = 0;
    double best_median = std::numeric_limits<double>::infinity();
    for (const auto& v : value_order(name, it->second, declared)) {
      ValueEffect ve = value_summary(it->second.at(v));
      if (!ve.times_ms.empty()) {
        between +=
            static_cast<double>(ve.times_ms.size()) * (ve.mean_log - mean) * (ve.mean_log - mean);
        if (ve.median_ms < best_median) {
          best_median = ve.median_ms;
          e.best_value = ve.value;
        }
      }
      e.values.push_back(std::move(ve));
    }
    e.importance = total > 0 ? std::clamp(between / total, 0.0, 1.0) : 0.0;
    a.effects.push_back(std::move(e));
  }
  std::stable_sort(a.effects.begin(), a.effects.end(),
                   [](const ParameterEffect& x, const ParameterEffect& y) {
                     return x.importance > y.importance;
                   });
  a.explained = additive_r2(latest, a.params, all_logs, mean, total);
}

using FailureGroups = std::map<std::pair<TrialStatus, std::string>, FailureGroup>;

// Counts a failed trial in its group: its status and the shape of its reason.
void add_failure(FailureGroups& failures, const TrialRecord& t, int examples) {
  // The compiler's own error line says what went wrong for every configuration alike;
  // the trial's error names the instantiation.
  std::string reason = first_line(t.error);
  if (t.status == TrialStatus::kCompileFailed) {
    const std::string from_log = log_error_line(t.compile_log);
    if (!from_log.empty()) reason = from_log;
  }
  if (reason.empty()) reason = "(no message)";
  // Messages that differ only in their numbers (sizes, registers, values) are one reason.
  const std::string shape = digits_to_n(reason);
  FailureGroup& g = failures[{t.status, shape}];
  if (g.count == 0)
    g.reason = reason;
  else if (g.reason != reason)
    g.reason = shape;
  g.status = t.status;
  ++g.count;
  if (g.examples.size() < static_cast<std::size_t>(std::max(examples, 0))) g.examples.push_back(t);
}

// The top configurations among the ok ones (sorted by time), and the stored best wherever it
// ranks.
void rank_top(DeviceAnalysis& a, const std::vector<const TrialRecord*>& ok,
              const std::map<std::string, const TrialRecord*>& retimed, int top_count) {
  const std::size_t top = std::min(ok.size(), static_cast<std::size_t>(std::max(top_count, 0)));
  for (std::size_t i = 0; i < ok.size(); ++i) {
    const bool is_best = a.best && a.best_is_stored && ok[i]->config_key == a.best->config_key;
    if (i >= top && !is_best) continue;
    TopConfig c;
    c.trial = *ok[i];
    c.rank = i + 1;
    c.is_best = is_best;
    if (auto it = retimed.find(ok[i]->config_key); it != retimed.end())
      c.retimed_ms = it->second->time_ms;
    a.top.push_back(std::move(c));
  }
}

// Failure groups, the most frequent first.
void sort_failures(DeviceAnalysis& a, FailureGroups& failures) {
  for (auto& [k, g] : failures) a.failures.push_back(std::move(g));
  std::stable_sort(
      a.failures.begin(), a.failures.end(), [](const FailureGroup& x, const FailureGroup& y) {
        return x.count != y.count ? x.count > y.count
                                  : static_cast<int>(x.status) < static_cast<int>(y.status);
      });
}

DeviceAnalysis analyse_device(const Store& store, const ReportStudy& study, std::int64_t device_id,
                              const ReportOptions& options) {
  DeviceAnalysis a;
  std::map<std::string, std::vector<std::string>> declared;
  std::map<std::string, const TrialRecord*> latest;   // config key -> latest search trial
  std::map<std::string, const TrialRecord*> retimed;  // config key -> latest re-timing
  FailureGroups failures;
  const ReportRun* last_retimed_run = nullptr;
  for (const ReportRun& r : study.runs) {
    if (r.run.device_id != device_id) continue;
    if (a.run_ids.empty()) {
      a.device = r.device;
      a.params = parameter_order(r.kernel, declared);
    }
    a.run_ids.push_back(r.run.id);
    for (const TrialRecord& t : r.search) {
      ++a.evaluations;
      ++a.by_status[t.status];
      latest[t.config_key] = &t;
      if (t.status != TrialStatus::kOk) add_failure(failures, t, options.failure_examples);
    }
    for (const TrialRecord& t : r.retimed) retimed[t.config_key] = &t;
    if (!r.retimed.empty()) last_retimed_run = &r;
  }
  if (last_retimed_run) a.finalists = last_retimed_run->retimed;

  std::vector<const TrialRecord*> distinct;
  for (const auto& [key, t] : latest) distinct.push_back(t);
  std::sort(distinct.begin(), distinct.end(),
            [](const TrialRecord* x, const TrialRecord* y) { return x->id < y->id; });
  a.distinct = distinct.size();
  analyse_effects(a, distinct, declared);

  // The stored best, else the fastest ok trial.
  if (auto b = store.best(study.kernel_name, study.problem_key, device_id)) {
    a.best = b->trial;
    a.best_is_stored = true;
  }
  std::vector<const TrialRecord*> ok;
  for (const TrialRecord* t : distinct)
    if (timed_ok(*t)) ok.push_back(t);
  a.distinct_ok = ok.size();
  std::stable_sort(ok.begin(), ok.end(), [](const TrialRecord* x, const TrialRecord* y) {
    return x->time_ms < y->time_ms;
  });
  if (!a.best && !ok.empty()) a.best = *ok.front();
  std::map<std::string, const TrialRecord*> energy;  // config key -> latest trial with one
  for (const auto* by : {&latest, &retimed})
    for (const auto& [key, t] : *by)
      if (timed_ok(*t) && !t->cut && std::isfinite(t->energy_j) &&
          (!energy.count(key) || energy[key]->id < t->id))
        energy[key] = t;
  for (const auto& [key, t] : energy) a.with_energy.push_back(*t);
  if (a.best && a.best_is_stored) {
    const auto run = store.run(a.best->run_id);
    a.pareto = store.pareto(a.best->kernel_id, a.best->device_id, a.best->problem_id,
                            run && run->replayed);
  }
  rank_top(a, ok, retimed, options.top);
  sort_failures(a, failures);
  return a;
}

std::optional<CrossDevice> cross_device(const Store& store, Cache& cache,
                                        const ReportStudy& study) {
  // Every run of this kernel and problem in the database, whatever the selection.
  std::map<std::int64_t, std::vector<std::int64_t>> runs_by_device;
  for (const RunRecord& r : store.runs(study.kernel_name))
    if (cache.problem(r.problem_id).key == study.problem_key)
      runs_by_device[r.device_id].push_back(r.id);
  if (runs_by_device.size() < 2) return std::nullopt;
  CrossDevice x;
  std::vector<std::unordered_map<std::string, double>> times;  // per device: key -> latest ok time
  std::vector<std::int64_t> ids;
  for (const auto& [device_id, runs] : runs_by_device) ids.push_back(device_id);
  std::sort(ids.begin(), ids.end(), [&](std::int64_t a, std::int64_t b) {
    const auto& da = cache.device(a);
    const auto& db = cache.device(b);
    return da.name != db.name ? da.name < db.name : a < b;
  });
  for (const std::int64_t device_id : ids) {
    std::unordered_map<std::string, double> latest;
    std::unordered_map<std::string, std::int64_t> latest_id;
    const TrialRecord* fastest = nullptr;
    std::vector<const TrialRecord*> all;
    for (const std::int64_t run_id : runs_by_device[device_id]) {
      for (const TrialRecord& t : cache.trials(run_id)) {
        if (!timed_ok(t)) continue;
        if (t.id > latest_id[t.config_key]) {
          latest_id[t.config_key] = t.id;
          latest[t.config_key] = t.time_ms;
        }
        if (!is_retimed(t) && (!fastest || t.time_ms < fastest->time_ms)) fastest = &t;
      }
    }
    std::optional<TrialRecord> best;
    bool stored = false;
    if (auto b = store.best(study.kernel_name, study.problem_key, device_id)) {
      best = b->trial;
      stored = true;
    } else if (fastest) {
      best = *fastest;
    }
    if (!best) continue;  // a device with no ok trial has no best to compare
    x.devices.push_back(cache.device(device_id));
    x.best.push_back(*best);
    x.best_is_stored.push_back(stored);
    latest[best->config_key] = best->time_ms;
    times.push_back(std::move(latest));
  }
  if (x.devices.size() < 2) return std::nullopt;
  const std::size_t n = x.devices.size();
  x.time_ms.assign(n, std::vector<std::optional<double>>(n));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j)
      if (auto it = times[j].find(x.best[i].config_key); it != times[j].end())
        x.time_ms[i][j] = it->second;
  return x;
}

}  // namespace

namespace {

// The family section of each (kernel, device) among the runs that has a selector.
std::vector<ReportFamily> families_of(const Store& store, const std::vector<RunRecord>& runs,
                                      Cache& cache) {
  std::set<std::pair<std::string, std::int64_t>> seen;
  std::vector<ReportFamily> out;
  for (const RunRecord& r : runs) {
    const std::string& kernel = cache.kernel(r.kernel_id).name;
    if (!seen.insert({kernel, r.device_id}).second) continue;
    auto record = store.selector(kernel, r.device_id);
    if (!record || record->selector.rows.empty()) continue;
    ReportFamily f;
    f.kernel_name = kernel;
    f.device = cache.device(r.device_id);
    const Selector& sel = record->selector;
    const std::vector<std::string> varying = sel.varying();
    f.size_name = varying.empty() ? sel.rows.front().problem.begin()->first : varying.front();
    for (std::size_t i = 0; i < sel.rows.size(); ++i) {
      const SelectorRow& row = sel.rows[i];
      ReportFamily::Row fr;
      fr.problem_key = row.key;
      fr.size = static_cast<double>(row.problem.at(f.size_name));
      fr.best_ms = std::numeric_limits<double>::quiet_NaN();
      for (std::size_t c = 0; c < row.time_ms.size(); ++c)
        if (std::isfinite(row.time_ms[c]) && !(row.time_ms[c] >= fr.best_ms)) {
          fr.best_ms = row.time_ms[c];
          fr.best_key = sel.candidates[c];
        }
      fr.held_out_performance = std::numeric_limits<double>::quiet_NaN();
      for (const HeldOutPick& h : sel.held_out)
        if (h.problem_key == row.key) {
          fr.held_out_key = sel.candidates[h.pick];
          fr.held_out_performance = h.performance;
        }
      f.rows.push_back(std::move(fr));
    }
    std::sort(
        f.rows.begin(), f.rows.end(),
        [](const ReportFamily::Row& a, const ReportFamily::Row& b) { return a.size < b.size; });
    f.selector = std::move(*record);
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace

Report build_report(const Store& store, const ReportSelection& selection,
                    const ReportOptions& options) {
  Cache cache(store);
  const std::vector<RunRecord> runs = matching_runs(store, cache, selection);
  Report report;
  report.options = options;
  report.generated_at = options.generated_at.empty() ? utc_now() : options.generated_at;

  std::map<std::pair<std::string, std::string>, ReportStudy> studies;
  for (const RunRecord& r : runs) {
    ReportRun rr = make_run(r, cache);
    ReportStudy& s = studies[{rr.kernel.name, rr.problem.key}];
    s.kernel_name = rr.kernel.name;
    s.problem_key = rr.problem.key;
    if (std::none_of(s.kernels.begin(), s.kernels.end(),
                     [&](const KernelRecord& k) { return k.id == rr.kernel.id; }))
      s.kernels.push_back(rr.kernel);
    s.runs.push_back(std::move(rr));
  }
  for (auto& [key, s] : studies) {
    std::set<std::int64_t> devices;
    for (const auto& r : s.runs) devices.insert(r.run.device_id);
    for (auto& r : s.runs) {
      r.label = fmt::format("#{} {}", r.run.id, r.run.strategy_text());
      if (devices.size() > 1) r.label += fmt::format(" ({})", r.device.name);
    }
    std::vector<std::int64_t> order(devices.begin(), devices.end());
    std::sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
      const auto& da = cache.device(a);
      const auto& db = cache.device(b);
      return da.name != db.name ? da.name < db.name : a < b;
    });
    for (const std::int64_t d : order) s.devices.push_back(analyse_device(store, s, d, options));
    s.cross = cross_device(store, cache, s);
    for (const auto& r : s.runs) report.trials += r.search.size() + r.retimed.size();
    report.studies.push_back(std::move(s));
  }
  report.families = families_of(store, runs, cache);
  return report;
}

}  // namespace ktune
