#include "ktune/selector.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "ktune/error.h"

namespace ktune {

namespace {

constexpr double kMissingLogPerformance = -6.907755278982137;  // log(1/1000)

double feature(std::int64_t v) {
  return v > 0 ? std::log2(static_cast<double>(v))
               : -std::log2(1.0 + std::abs(static_cast<double>(v)));
}

// The parameters that vary across the rows.
std::vector<std::string> varying(const std::vector<SelectorRow>& rows) {
  std::vector<std::string> out;
  if (rows.empty()) return out;
  for (const auto& [name, value] : rows.front().problem)
    for (const SelectorRow& r : rows) {
      const auto it = r.problem.find(name);
      if (it == r.problem.end() || it->second != value) {
        out.push_back(name);
        break;
      }
    }
  return out;
}

double distance2(const Problem& a, const Problem& b, const std::vector<std::string>& names) {
  double d = 0;
  for (const std::string& n : names) {
    const auto ia = a.find(n), ib = b.find(n);
    if (ia == a.end() || ib == b.end()) return std::numeric_limits<double>::infinity();
    const double x = feature(ia->second) - feature(ib->second);
    d += x * x;
  }
  return d;
}

// Each row's log performance of each candidate: log(fastest there / its time).
std::vector<std::vector<double>> log_performance(const std::vector<SelectorRow>& rows,
                                                 std::size_t candidates) {
  std::vector<std::vector<double>> out;
  for (const SelectorRow& r : rows) {
    double best = std::numeric_limits<double>::infinity();
    for (double t : r.time_ms)
      if (std::isfinite(t) && t > 0) best = std::min(best, t);
    std::vector<double> lp(candidates, kMissingLogPerformance);
    for (std::size_t c = 0; c < candidates && c < r.time_ms.size(); ++c)
      if (std::isfinite(r.time_ms[c]) && r.time_ms[c] > 0)
        lp[c] = std::max(kMissingLogPerformance, std::log(best / r.time_ms[c]));
    out.push_back(std::move(lp));
  }
  return out;
}

// Solves the small symmetric system a z = b (Gaussian elimination, partial pivoting).
std::vector<double> solve(std::vector<std::vector<double>> a, std::vector<double> b) {
  const std::size_t n = b.size();
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t p = i;
    for (std::size_t k = i + 1; k < n; ++k)
      if (std::abs(a[k][i]) > std::abs(a[p][i])) p = k;
    std::swap(a[i], a[p]);
    std::swap(b[i], b[p]);
    if (std::abs(a[i][i]) < 1e-300) continue;
    for (std::size_t k = i + 1; k < n; ++k) {
      const double f = a[k][i] / a[i][i];
      for (std::size_t j = i; j < n; ++j) a[k][j] -= f * a[i][j];
      b[k] -= f * b[i];
    }
  }
  std::vector<double> z(n, 0.0);
  for (std::size_t i = n; i-- > 0;) {
    double s = b[i];
    for (std::size_t j = i + 1; j < n; ++j) s -= a[i][j] * z[j];
    z[i] = std::abs(a[i][i]) < 1e-300 ? 0.0 : s / a[i][i];
  }
  return z;
}

// The pick among `rows` (with their log performances) for `problem`: the candidate whose
// locally weighted line is highest at the problem; ties to the higher weighted mean, then to
// the earlier candidate.
std::size_t pick_among(const std::vector<SelectorRow>& rows,
                       const std::vector<std::vector<double>>& lp, std::size_t candidates,
                       const Problem& problem, double width) {
  const std::vector<std::string> names = varying(rows);
  const std::size_t n = 1 + names.size();
  std::vector<double> w;
  std::vector<std::vector<double>> x;  // 1, then the offsets from the problem
  for (const SelectorRow& r : rows) {
    w.push_back(std::exp(-distance2(r.problem, problem, names) / (2 * width * width)));
    std::vector<double> xi{1.0};
    for (const std::string& name : names)
      xi.push_back(feature(r.problem.at(name)) -
                   feature(problem.count(name) ? problem.at(name) : 0));
    x.push_back(std::move(xi));
  }
  std::vector<std::vector<double>> a(n, std::vector<double>(n, 0.0));
  for (std::size_t r = 0; r < rows.size(); ++r)
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j) a[i][j] += w[r] * x[r][i] * x[r][j];
  for (std::size_t i = 0; i < n; ++i) a[i][i] += 1e-6;  // a ridge: two rows, one direction
  std::size_t best = 0;
  double best_line = -std::numeric_limits<double>::infinity(), best_mean = best_line;
  for (std::size_t c = 0; c < candidates; ++c) {
    std::vector<double> b(n, 0.0);
    double mean = 0;
    for (std::size_t r = 0; r < rows.size(); ++r) {
      for (std::size_t i = 0; i < n; ++i) b[i] += w[r] * x[r][i] * lp[r][c];
      mean += w[r] * lp[r][c];
    }
    const double line = std::min(0.0, solve(a, b)[0]);
    if (line > best_line + 1e-12 || (line > best_line - 1e-12 && mean > best_mean + 1e-12)) {
      best = c;
      best_line = line;
      best_mean = mean;
    }
  }
  return best;
}

}  // namespace

std::vector<std::string> Selector::varying() const { return ktune::varying(rows); }

std::map<std::string, std::pair<std::int64_t, std::int64_t>> Selector::range() const {
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> out;
  for (const SelectorRow& r : rows)
    for (const auto& [name, value] : r.problem) {
      auto [it, fresh] = out.try_emplace(name, value, value);
      it->second.first = std::min(it->second.first, value);
      it->second.second = std::max(it->second.second, value);
    }
  return out;
}

bool Selector::covers(const Problem& problem) const {
  if (rows.size() < 2 || candidates.empty()) return false;
  const auto bounds = range();
  if (problem.size() != bounds.size()) return false;
  for (const auto& [name, lo_hi] : bounds) {
    const auto it = problem.find(name);
    if (it == problem.end() || it->second < lo_hi.first || it->second > lo_hi.second) return false;
  }
  return true;
}

std::size_t Selector::pick(const Problem& problem) const {
  return pick_among(rows, log_performance(rows, candidates.size()), candidates.size(), problem,
                    width);
}

std::size_t Selector::nearest_row(const Problem& problem, std::size_t candidate) const {
  const std::vector<std::string> names = varying();
  std::size_t best = rows.size();
  double best_d = std::numeric_limits<double>::infinity();
  for (std::size_t r = 0; r < rows.size(); ++r) {
    if (candidate >= rows[r].time_ms.size() || !std::isfinite(rows[r].time_ms[candidate])) continue;
    const double d = distance2(rows[r].problem, problem, names);
    if (best == rows.size() || d < best_d) best = r, best_d = d;
  }
  return best;
}

std::vector<HeldOutPick> Selector::leave_one_out() const {
  std::vector<HeldOutPick> out;
  if (rows.size() < 3) return out;
  const auto lp = log_performance(rows, candidates.size());
  for (std::size_t left = 0; left < rows.size(); ++left) {
    std::vector<SelectorRow> rest;
    std::vector<std::vector<double>> rest_lp;
    for (std::size_t r = 0; r < rows.size(); ++r)
      if (r != left) rest.push_back(rows[r]), rest_lp.push_back(lp[r]);
    HeldOutPick h;
    h.problem_key = rows[left].key;
    h.pick = pick_among(rest, rest_lp, candidates.size(), rows[left].problem, width);
    h.performance = std::exp(lp[left][h.pick]);
    out.push_back(std::move(h));
  }
  return out;
}

double Selector::held_out_mean() const {
  if (held_out.empty()) return std::numeric_limits<double>::quiet_NaN();
  double s = 0;
  for (const HeldOutPick& h : held_out) s += h.performance;
  return s / static_cast<double>(held_out.size());
}

double Selector::held_out_worst() const {
  if (held_out.empty()) return std::numeric_limits<double>::quiet_NaN();
  double w = 1;
  for (const HeldOutPick& h : held_out) w = std::min(w, h.performance);
  return w;
}

nlohmann::json Selector::to_json() const {
  nlohmann::json j;
  j["method"] = method;
  j["width"] = width;
  j["candidates"] = nlohmann::json::array();
  for (std::size_t c = 0; c < candidates.size(); ++c)
    j["candidates"].push_back(
        {{"key", candidates[c]}, {"config", c < configs.size() ? configs[c] : "{}"}});
  j["rows"] = nlohmann::json::array();
  for (const SelectorRow& r : rows) {
    nlohmann::json times = nlohmann::json::array();
    for (double t : r.time_ms)
      times.push_back(std::isfinite(t) ? nlohmann::json(t) : nlohmann::json());
    j["rows"].push_back({{"key", r.key}, {"problem", r.problem}, {"time_ms", std::move(times)}});
  }
  j["held_out"] = nlohmann::json::array();
  for (const HeldOutPick& h : held_out)
    j["held_out"].push_back(
        {{"problem", h.problem_key}, {"pick", h.pick}, {"performance", h.performance}});
  return j;
}

Selector Selector::parse(std::string_view text, const std::string& where) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::kInput, where + ": unreadable json (" + e.what() + ")");
  }
  return from_json(j, where);
}

Selector Selector::from_json(const nlohmann::json& j, const std::string& where) {
  Selector s;
  try {
    s.method = j.at("method").get<std::string>();
    if (s.method != "local-linear")
      throw Error(ErrorKind::kInput, where + ": unknown selector method '" + s.method + "'");
    s.width = j.at("width").get<double>();
    if (!(s.width > 0)) throw Error(ErrorKind::kInput, where + ": selector width must be > 0");
    for (const auto& c : j.at("candidates")) {
      s.candidates.push_back(c.at("key").get<std::string>());
      s.configs.push_back(c.at("config").get<std::string>());
    }
    for (const auto& r : j.at("rows")) {
      SelectorRow row;
      row.problem = r.at("problem").get<Problem>();
      row.key = r.at("key").get<std::string>();
      for (const auto& t : r.at("time_ms"))
        row.time_ms.push_back(t.is_number() ? t.get<double>()
                                            : std::numeric_limits<double>::quiet_NaN());
      if (row.time_ms.size() != s.candidates.size())
        throw Error(ErrorKind::kInput,
                    where + ": a selector row does not have one time per candidate");
      if (!s.rows.empty() &&
          !std::equal(row.problem.begin(), row.problem.end(), s.rows.front().problem.begin(),
                      s.rows.front().problem.end(),
                      [](const auto& a, const auto& b) { return a.first == b.first; }))
        throw Error(ErrorKind::kInput,
                    where + ": the selector's rows name different problem parameters");
      s.rows.push_back(std::move(row));
    }
    for (const auto& h : j.at("held_out")) {
      HeldOutPick p;
      p.problem_key = h.at("problem").get<std::string>();
      p.pick = h.at("pick").get<std::size_t>();
      if (p.pick >= s.candidates.size())
        throw Error(ErrorKind::kInput, where + ": a held-out pick names no candidate");
      p.performance = h.at("performance").get<double>();
      s.held_out.push_back(std::move(p));
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::kInput, where + ": unreadable selector (" + e.what() + ")");
  }
  return s;
}

std::vector<std::string> selector_candidates(const std::vector<std::vector<std::string>>& ranked,
                                             std::size_t per_size, std::size_t max_total) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (std::size_t rank = 0; rank < per_size; ++rank)
    for (const auto& keys : ranked)
      if (rank < keys.size() && out.size() < max_total && seen.insert(keys[rank]).second)
        out.push_back(keys[rank]);
  return out;
}

}  // namespace ktune
