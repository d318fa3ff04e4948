// ktune::Client without the GPU: opening, the lookup with its device and problem fallbacks,
// cached answers, rendering and the kernel binary (stored CUBIN or NVRTC). The CUDA parts
// (device detection, loading, launching) are in cuda.cpp.
#include "ktune/client.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_set>

#include "client/client_impl.h"
#include "ktune/error.h"
#include "ktune/store.h"
#include "ktune/stored_spec.h"

namespace ktune {

using detail::Candidate;
using detail::DeviceRow;
using detail::KernelEntry;
using detail::SelectorEntry;

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// One parameter's term of problem_distance: |log2(a / b)| for positive values; a zero or
// negative value (an offset, a flag) compares on sign(v) log2(1 + |v|) instead.
double log_distance(std::int64_t a, std::int64_t b) {
  if (a > 0 && b > 0) return std::fabs(std::log2(static_cast<double>(a) / static_cast<double>(b)));
  const auto l = [](std::int64_t v) {
    const double m = std::log2(1.0 + std::fabs(static_cast<double>(v)));
    return v < 0 ? -m : m;
  };
  return std::fabs(l(a) - l(b));
}

double log_magnitude(std::int64_t v) {
  const double m = std::log2(1.0 + std::fabs(static_cast<double>(v)));
  return v < 0 ? -m : m;
}

// Ordering of candidates of one device level: the device most like this one, then the newest.
auto preference(const Candidate& c, const ClientDevice& d) {
  return std::make_tuple(c.device->name != d.name, std::abs(c.device->sm_count - d.sm_count),
                         std::llabs(c.device->memory_bytes - d.memory_bytes));
}

bool preferred(const Candidate& a, const Candidate& b, const ClientDevice& d) {
  const auto pa = preference(a, d), pb = preference(b, d);
  if (pa != pb) return pa < pb;
  return a.rank < b.rank;
}

double magnitude(const Problem& p) {
  double s = 0;
  for (const auto& [name, v] : p) s += log_magnitude(v);
  return s;
}

struct PairHash {
  std::size_t operator()(const std::pair<std::int64_t, std::int64_t>& p) const {
    return std::hash<std::int64_t>()(p.first) * 31 + std::hash<std::int64_t>()(p.second);
  }
};

constexpr std::size_t kMaxCachedAnswers = 65536;

std::string answer_key(std::string_view kernel, const Problem& problem, const LookupOptions& o) {
  std::string key;
  key.reserve(kernel.size() + 24 * problem.size() + 24);
  key.append(kernel);
  key += '\x1f';
  char number[32];
  for (const auto& [name, value] : problem) {
    key += name;
    key += '=';
    key.append(number, std::to_chars(number, number + sizeof number, value).ptr);
    key += ',';
  }
  key += o.other_devices ? 'D' : 'd';
  key += o.nearest_problem ? 'P' : 'p';
  key += o.selector ? 'S' : 's';
  if (std::isfinite(o.max_problem_distance)) {
    key.append(number, std::to_chars(number, number + sizeof number, o.max_problem_distance).ptr);
  }
  if (!o.policy.fastest()) key += '\x1f' + o.policy.text();
  return key;
}

}  // namespace

std::string_view to_string(DeviceMatch match) {
  switch (match) {
    case DeviceMatch::kExactDevice:
      return "exact device";
    case DeviceMatch::kSameArch:
      return "same architecture";
    case DeviceMatch::kSameMajor:
      return "same major architecture";
  }
  return "unknown";
}

std::string_view to_string(ProblemMatch match) {
  switch (match) {
    case ProblemMatch::kExact:
      return "exact problem";
    case ProblemMatch::kSelector:
      return "selector";
    case ProblemMatch::kNearest:
      return "nearest problem";
  }
  return "unknown";
}

std::string_view to_string(KernelOrigin origin) {
  switch (origin) {
    case KernelOrigin::kStoredBinary:
      return "stored binary";
    case KernelOrigin::kCompiled:
      return "compiled with NVRTC";
    case KernelOrigin::kDiskCache:
      return "NVRTC result from the cache directory";
  }
  return "unknown";
}

double problem_distance(const Problem& a, const Problem& b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double d = 0;
  for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
    if (ia->first != ib->first) return std::numeric_limits<double>::infinity();
    d += log_distance(ia->second, ib->second);
  }
  return d;
}

std::int64_t BestConfig::value(std::string_view name) const {
  auto it = config.find(std::string(name));
  if (it == config.end()) {
    std::string known;
    for (const auto& [n, v] : config) known += (known.empty() ? "" : ", ") + n;
    throw Error(ErrorKind::kUsage,
                kernel + ": no parameter '" + std::string(name) + "'; it has: " + known);
  }
  try {
    return it->second.as_int();
  } catch (const Error&) {
    throw Error(ErrorKind::kUsage, kernel + ": parameter '" + std::string(name) + "' is " +
                                       it->second.to_literal() + ", not an integer");
  }
}

std::string BestConfig::describe() const {
  std::string out = std::string(to_string(device_match));
  if (device_match != DeviceMatch::kExactDevice) {
    out += " (" + provenance.device_name + ", " + provenance.device_arch + ")";
  }
  out += ", " + std::string(to_string(problem_match));
  if (problem_match == ProblemMatch::kNearest) {
    char d[32];
    std::snprintf(d, sizeof d, "%.3g", problem_distance);
    out += " (" + problem_key + ", log2 distance " + d + ")";
  } else if (problem_match == ProblemMatch::kSelector) {
    char figures[96];
    std::snprintf(figures, sizeof figures, "held out %.3f on average, %.3f at worst",
                  selector.held_out_mean, selector.held_out_worst);
    out += " (one of " + std::to_string(selector.candidates) + " candidates over " +
           std::to_string(selector.problems) + " tuned problems, " +
           (std::isfinite(selector.held_out_mean) ? std::string(figures)
                                                  : std::string("too few to hold one out")) +
           "; measured at " + problem_key + ")";
  }
  return out;
}

namespace detail {

bool cubin_runs_on(const std::string& binary_arch, const ClientDevice& device) {
  if (binary_arch == device.arch) return true;
  const auto cc = parse_arch(binary_arch);
  if (!cc) return false;
  const char last = binary_arch.back();
  // sm_90a: that architecture alone (wgmma); sm_NN: the same major, this minor or newer.
  if (last == 'a') return cc->first == device.cc_major && cc->second == device.cc_minor;
  if (last == 'f') return false;
  return cc->first == device.cc_major && cc->second <= device.cc_minor;
}

}  // namespace detail

ClientDevice ClientDevice::describe(std::string name, std::string arch, int sm_count,
                                    std::int64_t memory_bytes) {
  const auto cc = parse_arch(arch);
  if (!cc) {
    throw Error(ErrorKind::kUsage,
                "'" + arch + "' is not an architecture; expected sm_NN, e.g. sm_90");
  }
  ClientDevice d;
  d.name = std::move(name);
  d.arch = std::move(arch);
  d.cc_major = cc->first;
  d.cc_minor = cc->second;
  d.sm_count = sm_count;
  d.memory_bytes = memory_bytes;
  d.limits = DeviceLimits::for_arch(d.cc_major * 10 + d.cc_minor);
  if (sm_count > 0) d.limits.multiprocessor_count = sm_count;
  return d;
}

Client::Impl::Impl(const std::filesystem::path& path, ClientDevice d, ClientOptions o)
    : device(std::move(d)),
      limits(detail::limit_values(device)),
      options(std::move(o)),
      db(path, options.busy_timeout, Client::kOldestSchemaVersion, Client::kSchemaVersion) {
  if (options.cache_dir) disk_cache = std::make_unique<CompileCache>(*options.cache_dir);
}

KernelEntry& Client::Impl::entry(const std::string& kernel) {
  auto it = kernels.find(kernel);
  if (it != kernels.end()) return it->second;
  KernelEntry e;
  // Only this device's major can answer (exact device, same arch and same major all share it),
  // and only measurements: a best of a replayed run (runs.replayed) never answers, as replayed
  // and measured trials never answer for each other in the store.
  // Newest first, so the first row of each (device, problem) is the newest kernel version's
  // (the order Store::best uses).
  auto q = db.query(
      "best",
      "SELECT b.kernel_id, b.device_id, b.problem_id, b.trial_id, b.problem_key, "
      "d.name, d.arch, d.cc_minor, d.sm_count, d.memory_bytes "
      "FROM best b JOIN devices d ON d.id = b.device_id JOIN trials t ON t.id = b.trial_id "
      "JOIN runs r ON r.id = t.run_id "
      "WHERE b.kernel_name = ? AND d.cc_major = ? AND d.arch LIKE 'sm!_%' ESCAPE '!' "
      "AND r.replayed = 0 AND " +
          std::string(detail::kUsableTrialTime) +
          " "
          "ORDER BY b.updated_at DESC, b.kernel_id DESC");
  q.bind(1, kernel);
  q.bind(2, std::int64_t{device.cc_major});
  std::unordered_set<std::pair<std::int64_t, std::int64_t>, PairHash> seen;
  while (q.step()) {
    Candidate c;
    c.kernel_id = q.integer(0);
    c.device_id = q.integer(1);
    c.problem_id = q.integer(2);
    if (!seen.emplace(c.device_id, c.problem_id).second) continue;
    c.trial_id = q.integer(3);
    c.rank = static_cast<int>(e.candidates.size());
    // The canonical key "n=16777216,m=4" holds the problem; problems.json is the fallback.
    if (auto p = parse_problem_key(q.text_view(4))) {
      c.problem = std::move(*p);
      c.problem_ok = true;
    }
    auto [d, fresh] = e.devices.try_emplace(c.device_id);
    if (fresh) {
      d->second.name = q.text(5);
      d->second.arch = q.text(6);
      d->second.cc_major = device.cc_major;
      d->second.cc_minor = static_cast<int>(q.integer(7));
      d->second.sm_count = static_cast<int>(q.integer(8));
      d->second.memory_bytes = q.integer(9);
    }
    c.device = &d->second;  // elements of an unordered_map keep their address
    e.candidates.push_back(std::move(c));
  }
  for (Candidate& c : e.candidates) {
    if (c.problem_ok) continue;
    auto pq = db.query("best", "SELECT json FROM problems WHERE id = ?");
    pq.bind(1, c.problem_id);
    if (!pq.step()) continue;
    try {
      const nlohmann::json problem = nlohmann::json::parse(pq.text_view(0));
      for (const auto& [name, v] : problem.items()) c.problem[name] = v.get<std::int64_t>();
      c.problem_ok = true;
    } catch (const nlohmann::json::exception&) {
      c.problem.clear();  // an unreadable problem never matches
    }
  }
  if (db.schema_version() >= 7) load_selectors(kernel, e);
  return kernels.emplace(kernel, std::move(e)).first->second;
}

void Client::Impl::load_selectors(const std::string& kernel, KernelEntry& e) {
  // Measured families only, as for bests; the newest selector of each device.
  auto q = db.query("best",
                    "SELECT s.id, s.kernel_id, s.device_id, s.json FROM selectors s "
                    "JOIN devices d ON d.id = s.device_id WHERE s.kernel_name = ? "
                    "AND d.cc_major = ? AND s.replayed = 0 ORDER BY s.created_at DESC, s.id DESC");
  q.bind(1, kernel);
  q.bind(2, std::int64_t{device.cc_major});
  std::unordered_set<std::int64_t> seen;
  while (q.step()) {
    SelectorEntry sel;
    sel.id = q.integer(0);
    sel.kernel_id = q.integer(1);
    sel.device_id = q.integer(2);
    const auto d = e.devices.find(sel.device_id);
    if (d == e.devices.end() || !seen.insert(sel.device_id).second) continue;
    sel.device = &d->second;
    try {
      sel.selector =
          Selector::parse(q.text_view(3), db.where() + ": selector " + std::to_string(sel.id));
    } catch (const Error& x) {
      throw Error(ErrorKind::kDatabase, x.what());  // a selector the database holds
    }
    e.selectors.push_back(std::move(sel));
  }
}

std::optional<Candidate> Client::Impl::selector_answer(const std::string& kernel,
                                                       const SelectorEntry& s,
                                                       const Problem& query) {
  if (!s.selector.covers(query)) return std::nullopt;
  const std::size_t candidate = s.selector.pick(query);
  const std::size_t row = s.selector.nearest_row(query, candidate);
  if (row >= s.selector.rows.size()) return std::nullopt;
  auto q =
      db.query("best",
               "SELECT t.id, t.problem_id FROM trials t JOIN problems p ON p.id = t.problem_id "
               "WHERE t.kernel_id = ? AND t.device_id = ? AND p.kernel_name = ? AND p.key = ? "
               "AND t.config_key = ? AND t.status = 0 AND t.kind IN (0, 2) "
               "ORDER BY t.id DESC LIMIT 1");
  q.bind(1, s.kernel_id);
  q.bind(2, s.device_id);
  q.bind(3, kernel);
  q.bind(4, s.selector.rows[row].key);
  q.bind(5, s.selector.candidates[candidate]);
  if (!q.step()) return std::nullopt;
  Candidate c;
  c.kernel_id = s.kernel_id;
  c.device_id = s.device_id;
  c.trial_id = q.integer(0);
  c.problem_id = q.integer(1);
  c.device = s.device;
  c.problem = s.selector.rows[row].problem;
  c.problem_ok = true;
  return c;
}

const std::vector<std::pair<std::string, std::int64_t>>& Client::Impl::problem_defaults(
    const std::string& kernel, KernelEntry& e) {
  if (e.defaults_loaded) return e.problem_defaults;
  auto q =
      db.query("best", "SELECT spec_json FROM kernels WHERE name = ? ORDER BY id DESC LIMIT 1");
  q.bind(1, kernel);
  if (q.step()) {
    try {
      for (const auto& p : StoredSpec::parse(q.text_view(0), db.where()).problem)
        e.problem_defaults.emplace_back(p.name, p.default_value);
    } catch (const Error&) {
      // Without defaults a query must name every problem parameter; nothing else changes.
      e.problem_defaults.clear();
    }
  }
  e.defaults_loaded = true;
  return e.problem_defaults;
}

bool Client::Impl::kernel_exists(const std::string& kernel) {
  auto q = db.query("best", "SELECT 1 FROM kernels WHERE name = ? LIMIT 1");
  q.bind(1, kernel);
  return q.step();
}

namespace {

// A best as the lookup found it: what was asked, how it matched, and the candidate's device and
// row ids; details() reads the rest.
std::shared_ptr<BestConfig> matched_best(const Candidate& c, const std::string& kernel,
                                         const Problem& query, DeviceMatch device_match,
                                         ProblemMatch problem_match, double distance) {
  auto b = std::make_shared<BestConfig>();
  b->kernel = kernel;
  b->problem = c.problem;
  b->query = query;
  b->device_match = device_match;
  b->problem_match = problem_match;
  b->problem_distance = distance;
  BestProvenance& p = b->provenance;
  p.device_name = c.device->name;
  p.device_arch = c.device->arch;
  p.device_sm_count = c.device->sm_count;
  p.device_memory_bytes = c.device->memory_bytes;
  p.device_id = c.device_id;
  p.kernel_id = c.kernel_id;
  p.problem_id = c.problem_id;
  p.trial_id = c.trial_id;
  return b;
}

// The details query's columns up to the best row's date: the measurement and provenance into
// `b`, the trial's config_json into `config_json`. Returns the index of the next column, the
// first of the kernel version's (name, source, entry, spec_json).
int read_trial(const detail::Query& q, BestConfig& b, std::string& config_json) {
  int i = 0;
  b.config_key = q.text(i++);
  config_json = q.text(i++);
  BestMeasurement& m = b.measurement;
  m.time_ms = q.real(i++);
  m.time_min_ms = q.real(i++);
  m.time_mean_ms = q.real(i++);
  m.time_spread = q.real(i++);
  m.sample_count = static_cast<int>(q.integer(i++));
  m.gbps = q.real(i++);
  m.gflops = q.real(i++);
  BestProvenance& p = b.provenance;
  p.compile_arch = q.text(i++);
  p.compile_options = q.text(i++);
  p.binary_key = q.text(i++);
  p.measured_at = q.text(i++);
  p.run_id = q.integer(i++);
  p.run_started_at = q.text(i++);
  p.run_finished_at = q.text(i++);
  const std::string strategy = q.text(i++);
  p.strategy = strategy_text(strategy, q.text(i++));  // "auto (bayes)" for a run of auto
  p.host = q.text(i++);
  p.ktune_version = q.text(i++);
  p.nvrtc_version = q.text(i++);
  p.driver_version = static_cast<int>(q.integer(i++));
  p.source_hash = q.text(i++);
  p.space_hash = q.text(i++);
  b.problem_key = q.text(i++);
  p.best_updated_at = q.text(i++);
  return i;
}

// The query of a best's trial, run, kernel version, problem key and the best row's date, with
// `chosen` as the strategy auto chose and `objective` as the objective the best was chosen by
// and the trial's value of it.
std::string best_query(const std::string& chosen, const std::string& objective) {
  return "SELECT t.config_key, t.config_json, t.time_ms, t.time_min_ms, t.time_mean_ms, "
         "t.time_spread, t.sample_count, t.gbps, t.gflops, t.arch, t.compile_options, "
         "t.cubin_hash, t.created_at, t.run_id, r.started_at, r.finished_at, r.strategy, " +
         chosen +
         ", r.host, r.ktune_version, r.nvrtc_version, r.driver_version, k.source_hash, "
         "k.space_hash, p.key, b.updated_at, k.name, k.source, k.entry, k.spec_json, " +
         objective +
         " FROM trials t JOIN runs r ON r.id = t.run_id JOIN kernels k ON k.id = t.kernel_id "
         "JOIN problems p ON p.id = t.problem_id LEFT JOIN best b ON b.kernel_id = t.kernel_id "
         "AND b.device_id = t.device_id AND b.problem_id = t.problem_id WHERE t.id = ?";
}

// The configuration's values from the trial's config_json; an unreadable one is a database
// error naming the trial.
void read_config(BestConfig& b, const std::string& config_json, std::int64_t trial_id,
                 const std::string& where) {
  try {
    const nlohmann::json config = nlohmann::json::parse(config_json.empty() ? "{}" : config_json);
    for (const auto& [name, v] : config.items()) b.config[name] = value_from_json(v);
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::kDatabase, where + ": best: trial " + std::to_string(trial_id) +
                                          ": unreadable config_json (" + e.what() + ")");
  }
}

}  // namespace

std::int64_t Client::Impl::policy_trial(const Candidate& c, const EnergyPolicy& policy,
                                        std::string& note) {
  if (db.schema_version() < 11) {
    note = "the database holds no energies (schema " + std::to_string(db.schema_version()) +
           "): the fastest";
    return c.trial_id;
  }
  auto q = db.query("best",
                    "SELECT t.id, t.time_ms, t.energy_j FROM pareto pa JOIN trials t ON t.id = "
                    "pa.trial_id JOIN runs r ON r.id = t.run_id WHERE pa.kernel_id = ? AND "
                    "pa.device_id = ? AND pa.problem_id = ? AND t.status = 0 AND r.replayed = 0 "
                    "ORDER BY t.id");
  q.bind(1, c.kernel_id);
  q.bind(2, c.device_id);
  q.bind(3, c.problem_id);
  std::vector<std::int64_t> ids;
  std::vector<TimeEnergy> points;
  while (q.step()) {
    ids.push_back(q.integer(0));
    points.push_back({q.real(1), q.real(2)});
  }
  const std::optional<std::size_t> pick = choose(points, policy);
  if (!pick) {
    note = "no energy was measured for this problem: the fastest";
    return c.trial_id;
  }
  return ids[*pick];
}

std::shared_ptr<BestConfig> Client::Impl::details(const Candidate& best, const std::string& kernel,
                                                  const Problem& query, DeviceMatch device_match,
                                                  ProblemMatch problem_match, double distance,
                                                  const EnergyPolicy& policy) {
  Candidate c = best;
  std::string note;
  if (!policy.fastest()) c.trial_id = policy_trial(best, policy, note);
  auto b = matched_best(c, kernel, query, device_match, problem_match, distance);
  b->policy = policy.text();
  b->policy_note = note;
  std::string config_json;
  // One query for the trial, its run, its kernel version (the source only when not cached),
  // its problem's key and the best row's date. What auto chose is a column from schema 6 on, the
  // objective from schema 10.
  static const std::string
      kOld = "'time', 0, NULL, NULL, NULL",
      kObjective =
          "COALESCE(b.objective, 'time'), COALESCE(b.objective_higher_is_better, "
          "0), t.objective, NULL, NULL",
      kEnergy =
          "COALESCE(b.objective, 'time'), COALESCE(b.objective_higher_is_better, "
          "0), t.objective, t.energy_j, t.power_w";
  static const std::string kSql[4] = {best_query("''", kOld), best_query("r.strategy_chosen", kOld),
                                      best_query("r.strategy_chosen", kObjective),
                                      best_query("r.strategy_chosen", kEnergy)};
  const int schema = db.schema_version();
  auto q = db.query("best", kSql[schema >= 11 ? 3 : schema >= 10 ? 2 : schema >= 6 ? 1 : 0]);
  q.bind(1, c.trial_id);
  if (!q.step()) {
    throw Error(ErrorKind::kDatabase,
                db.where() + ": best: trial " + std::to_string(c.trial_id) + " is missing");
  }
  const int i = read_trial(q, *b, config_json);
  if (auto it = stored.find(c.kernel_id); it != stored.end()) {
    b->stored = it->second;
  } else {
    b->stored = detail::make_stored_kernel(c.kernel_id, q.text(i), q.text(i + 1), q.text(i + 2),
                                           q.text(i + 3), db.where());
    stored.emplace(c.kernel_id, b->stored);
  }
  b->objective = q.text(i + 4);
  b->objective_higher_is_better = q.integer(i + 5) != 0;
  b->measurement.objective = q.real(i + 6);
  b->measurement.energy_j = q.real(i + 7);
  b->measurement.power_w = q.real(i + 8);
  read_config(*b, config_json, c.trial_id, db.where());
  return b;
}

std::string Client::Impl::no_match_message(const std::string& kernel, const Problem& query,
                                           const LookupOptions& options) {
  std::string out = kernel + "[" + problem_key(query) + "]: no stored best for " + device.name +
                    " (" + device.arch + ")";
  // Rare, so the devices of every major are read only here: those with a measured best, and
  // those whose bests all come from replayed runs (which never answer, see entry()).
  std::set<std::string> tuned, replayed;
  auto q = db.query(
      "best",
      "SELECT d.name, d.arch, MIN(COALESCE(r.replayed, 0)) FROM best b "
      "JOIN devices d ON d.id = b.device_id LEFT JOIN trials t ON t.id = b.trial_id "
      "LEFT JOIN runs r ON r.id = t.run_id WHERE b.kernel_name = ? GROUP BY d.name, d.arch");
  q.bind(1, kernel);
  while (q.step())
    (q.integer(2) == 0 ? tuned : replayed).insert(q.text(0) + " (" + q.text(1) + ")");
  if (tuned.empty() && replayed.empty()) return out + "; nothing of this kernel has been tuned yet";
  const auto list = [](const std::set<std::string>& devices) {
    std::string text;
    for (const auto& d : devices) text += (text.empty() ? "" : ", ") + d;
    return text;
  };
  if (!tuned.empty()) out += "; tuned on: " + list(tuned);
  if (!replayed.empty())
    out += "; the stored runs of " + list(replayed) +
           " were replayed from recordings, and replayed runs never answer the client";
  if (!options.other_devices) out += "; other devices were not allowed";
  if (!options.nearest_problem)
    out += "; only the exact problem was allowed";
  else if (std::isfinite(options.max_problem_distance)) {
    char d[32];
    std::snprintf(d, sizeof d, "%g", options.max_problem_distance);
    out += std::string("; problems within log2 distance ") + d + " only";
  }
  return out;
}

namespace {

// The candidates and selectors of one device level.
struct Level {
  DeviceMatch match;
  std::vector<const Candidate*> members;
  std::vector<const SelectorEntry*> selectors;
};

// Device levels, most specific first; the same-major level goes down from the newest minor.
std::vector<Level> device_levels(const KernelEntry& e, const ClientDevice& device) {
  std::vector<Level> levels;
  levels.push_back({DeviceMatch::kExactDevice, {}, {}});
  levels.push_back({DeviceMatch::kSameArch, {}, {}});
  std::map<int, Level, std::greater<>> by_minor;
  // The level of a device: 0, 1, or its minor's (nullptr: none).
  const auto level_of = [&](const DeviceRow& d) -> Level* {
    if (d.same_device(device)) return &levels[0];
    if (d.arch == device.arch) return &levels[1];
    if (d.cc_major == device.cc_major && d.cc_minor <= device.cc_minor) {
      Level& l = by_minor[d.cc_minor];
      l.match = DeviceMatch::kSameMajor;
      return &l;
    }
    return nullptr;
  };
  for (const Candidate& c : e.candidates)
    if (Level* l = level_of(*c.device)) l->members.push_back(&c);
  for (const SelectorEntry& s : e.selectors)
    if (Level* l = level_of(*s.device)) l->selectors.push_back(&s);
  for (auto& [minor, level] : by_minor) levels.push_back(std::move(level));
  return levels;
}

const Candidate* exact_match(const Level& level, const Problem& query, const ClientDevice& device) {
  const Candidate* exact = nullptr;
  for (const Candidate* c : level.members) {
    if (c->problem_ok && c->problem == query && (!exact || preferred(*c, *exact, device)))
      exact = c;
  }
  return exact;
}

// The level's candidate of the nearest problem within the allowed distance (nullptr: none), its
// distance in `nearest_distance`.
const Candidate* nearest_match(const Level& level, const Problem& query, const ClientDevice& device,
                               const LookupOptions& options, double& nearest_distance) {
  const Candidate* nearest = nullptr;
  nearest_distance = 0;
  for (const Candidate* c : level.members) {
    if (!c->problem_ok) continue;
    const double d = problem_distance(c->problem, query);
    if (!std::isfinite(d) || d > options.max_problem_distance) continue;  // other names: inf
    bool better = !nearest || d < nearest_distance;
    if (nearest && d == nearest_distance) {
      // Ties: the device most like this one, then the larger problem, then the newest.
      const auto pc = preference(*c, device), pn = preference(*nearest, device);
      if (pc != pn) {
        better = pc < pn;
      } else if (magnitude(c->problem) != magnitude(nearest->problem)) {
        better = magnitude(c->problem) > magnitude(nearest->problem);
      } else {
        better = preferred(*c, *nearest, device);
      }
    }
    if (better) {
      nearest = c;
      nearest_distance = d;
    }
  }
  return nearest;
}

}  // namespace

LookupResult Client::Impl::lookup(const std::string& kernel, const Problem& asked,
                                  const LookupOptions& options) {
  // No read transaction: trials and kernel versions are never changed or deleted, so the
  // rows the queries below read stay valid whatever a writer does in between.
  KernelEntry& e = entry(kernel);
  LookupResult result;
  if (e.candidates.empty() && !kernel_exists(kernel)) {
    result.status = LookupResult::Status::kNoKernel;
    result.message = kernel + ": no kernel of that name in " + db.where();
    return result;
  }
  Problem query = asked;
  // The kernel's defaults fill in what the query leaves out (read only when it does).
  const bool incomplete =
      std::any_of(e.candidates.begin(), e.candidates.end(), [&](const Candidate& c) {
        return std::any_of(c.problem.begin(), c.problem.end(),
                           [&](const auto& kv) { return asked.find(kv.first) == asked.end(); });
      });
  if (incomplete) {
    for (const auto& [name, fallback] : problem_defaults(kernel, e)) query.emplace(name, fallback);
  }

  for (const Level& level : device_levels(e, device)) {
    if (level.match != DeviceMatch::kExactDevice && !options.other_devices) break;
    if (const Candidate* exact = exact_match(level, query, device)) {
      result.status = LookupResult::Status::kFound;
      result.best =
          details(*exact, kernel, query, level.match, ProblemMatch::kExact, 0, options.policy);
      return result;
    }
    if (!options.nearest_problem) continue;
    if (options.selector) {
      for (const SelectorEntry* sel : level.selectors) {
        const auto c = selector_answer(kernel, *sel, query);
        if (!c) continue;
        auto best = details(*c, kernel, query, level.match, ProblemMatch::kSelector,
                            problem_distance(c->problem, query), options.policy);
        best->selector.problems = sel->selector.rows.size();
        best->selector.candidates = sel->selector.candidates.size();
        best->selector.held_out_mean = sel->selector.held_out_mean();
        best->selector.held_out_worst = sel->selector.held_out_worst();
        result.status = LookupResult::Status::kFound;
        result.best = std::move(best);
        return result;
      }
    }
    double nearest_distance = 0;
    if (const Candidate* nearest = nearest_match(level, query, device, options, nearest_distance)) {
      result.status = LookupResult::Status::kFound;
      result.best = details(*nearest, kernel, query, level.match, ProblemMatch::kNearest,
                            nearest_distance, options.policy);
      return result;
    }
  }
  result.status = LookupResult::Status::kNoMatch;
  result.message = no_match_message(kernel, query, options);
  return result;
}

Client::Client(const std::filesystem::path& db, ClientOptions options)
    : Client(db, ClientDevice::current(0), std::move(options)) {}

Client::Client(const std::filesystem::path& db, ClientDevice device, ClientOptions options)
    : impl_(std::make_unique<Impl>(db, std::move(device), std::move(options))) {}

Client::~Client() = default;
Client::Client(Client&&) noexcept = default;
Client& Client::operator=(Client&&) noexcept = default;

const ClientDevice& Client::device() const { return impl_->device; }
const std::filesystem::path& Client::path() const { return impl_->db.path(); }
int Client::schema_version() const { return impl_->db.schema_version(); }
int Client::open_flags() const { return impl_->db.open_flags(); }

bool Client::read_only() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->db.read_only();
}

LookupResult Client::best(std::string_view kernel, const Problem& problem,
                          const LookupOptions& options) {
  const std::string key = answer_key(kernel, problem, options);
  std::lock_guard lock(impl_->mutex);
  if (auto it = impl_->answers.find(key); it != impl_->answers.end()) return it->second;
  LookupResult result = impl_->lookup(std::string(kernel), problem, options);
  // A program that asks for ever new sizes must not grow without bound; the kernel entries
  // stay, so refilling costs one query per answer.
  if (impl_->answers.size() >= kMaxCachedAnswers) impl_->answers.clear();
  impl_->answers.emplace(key, result);
  return result;
}

void Client::clear_cache() {
  std::lock_guard lock(impl_->mutex);
  impl_->answers.clear();
  impl_->kernels.clear();
  impl_->stored.clear();
  impl_->binaries.clear();
  impl_->loaded.clear();
}

LaunchShape Client::shape(const BestConfig& best, const Problem& problem) const {
  return detail::eval_shape(best, problem, impl_->limits);
}

CompileRequest Client::render(const BestConfig& best, const std::string& arch) const {
  return detail::render_request(best, arch, impl_->limits);
}

std::shared_ptr<const KernelBinary> Client::binary(const BestConfig& best) {
  Impl& m = *impl_;
  const std::string cache_key =
      std::to_string(best.provenance.trial_id) + "|" + best.provenance.binary_key;
  std::string reason;
  {
    std::lock_guard lock(m.mutex);
    if (auto it = m.binaries.find(cache_key); it != m.binaries.end()) return it->second;
    const auto t0 = Clock::now();
    if (best.provenance.binary_key.empty()) {
      reason = "the winner's trial names no binary";
    } else {
      auto q = m.db.query("binary", "SELECT arch, lowered_name, cubin FROM binaries WHERE key = ?");
      q.bind(1, best.provenance.binary_key);
      if (!q.step()) {
        reason = "the database keeps no binary of the winner";
      } else if (const std::string arch = q.text(0); !detail::cubin_runs_on(arch, m.device)) {
        reason = "the stored binary is for " + arch + ", this device is " + m.device.arch;
      } else {
        auto b = std::make_shared<KernelBinary>();
        b->arch = arch;
        b->lowered_name = q.text(1);
        b->cubin = q.blob(2);
        b->key = best.provenance.binary_key;
        b->origin = KernelOrigin::kStoredBinary;
        b->obtain_ms = ms_since(t0);
        m.binaries.emplace(cache_key, b);
        return b;
      }
    }
  }
  // NVRTC runs without the lock, so other threads keep querying meanwhile.
  const auto t0 = Clock::now();
  const CompileRequest request = render(best, m.device.arch);
  const CompileResult c = compile_cached(request, m.disk_cache.get());
  if (!c.ok) {
    std::string first_line = c.log.substr(0, c.log.find('\n'));
    throw Error(ErrorKind::kCompile, best.kernel + "[" + best.config_key + "] " + m.device.arch +
                                         ": " + c.error +
                                         (first_line.empty() ? "" : ": " + first_line));
  }
  auto b = std::make_shared<KernelBinary>();
  b->cubin = c.cubin;
  b->lowered_name = c.lowered_name;
  b->arch = c.arch;
  b->key = c.key;
  b->origin = c.from_cache ? KernelOrigin::kDiskCache : KernelOrigin::kCompiled;
  b->reason = reason;
  b->obtain_ms = ms_since(t0);
  std::lock_guard lock(m.mutex);
  return m.binaries.emplace(cache_key, std::move(b)).first->second;
}

}  // namespace ktune
