// Strategy benchmark on recorded spaces (see ktune/bench_strategies.h): the in-memory evaluation
// loop, calculated random search, the cut-off budget and the standardised score of Willemsen,
// van Nieuwpoort and van Werkhoven's methodology, and the report.
#include "ktune/bench_strategies.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>
#include <unordered_set>

#include "ktune/error.h"
#include "ktune/instance.h"
#include "ktune/stagnation.h"

namespace ktune {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<double> ok_times(const BenchSpace& s) {
  std::vector<double> t;
  for (const auto& o : s.outcomes)
    if (o.status == TrialStatus::kOk && std::isfinite(o.time_ms)) t.push_back(o.time_ms);
  std::sort(t.begin(), t.end());
  return t;
}

double mean(const std::vector<double>& v) {
  return v.empty() ? kNaN
                   : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double stddev(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = mean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size() - 1));
}

}  // namespace

std::size_t BenchSpace::ok_count() const { return ok_times(*this).size(); }

double BenchSpace::optimum() const {
  const auto t = ok_times(*this);
  return t.empty() ? kNaN : t.front();
}

double BenchSpace::median() const {
  const auto t = ok_times(*this);
  if (t.empty()) return kNaN;
  const std::size_t n = t.size();
  return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

double BenchSpace::worst() const {
  const auto t = ok_times(*this);
  return t.empty() ? kNaN : t.back();
}

BenchSpace make_bench_space(std::string name, std::shared_ptr<const SearchSpace> space,
                            const std::function<Outcome(const Config&)>& outcome) {
  BenchSpace s;
  s.name = std::move(name);
  s.space = std::move(space);
  s.space->for_each_valid([&](const Config& c) {
    s.index.emplace(c, s.configs.size());
    s.configs.push_back(c);
    s.outcomes.push_back(outcome(c));
    return true;
  });
  return s;
}

BenchSpace bench_space_from_recording(const Recording& recording, const Registry* registry,
                                      std::string name, const std::string& objective) {
  if (objective != "time" && objective != "energy" && objective != "edp")
    throw Error(ErrorKind::kUsage,
                fmt::format("--objective '{}': expected time, energy or edp", objective));
  const bool by_time = objective == "time";
  if (!by_time && std::none_of(recording.trials.begin(), recording.trials.end(),
                               [](const RecordedTrial& t) { return std::isfinite(t.energy_j); }))
    throw Error(ErrorKind::kInput,
                fmt::format("{}: the recording holds no energies (nvml_energy) for objective {}",
                            recording.path, objective));
  std::uint64_t without_energy = 0;
  ReplayTarget target = replay_target(recording, registry);
  auto instance = std::make_shared<KernelInstance>(target.kernel, target.problem, target.limits);
  std::shared_ptr<const SearchSpace> space(instance, &instance->space());
  // The backend only reads the recording during this call.
  ReplayBackend backend(std::shared_ptr<const Recording>(std::shared_ptr<void>(), &recording));
  backend.bind(*space);
  std::uint64_t missing = 0;
  BenchSpace s = make_bench_space(
      name.empty() ? recording.kernel_name + "@" + recording.device_name : name, space,
      [&](const Config& c) {
        const Measurement m = backend.evaluate(c, nullptr);
        if (m.status == TrialStatus::kInvalid && m.error == "not in the recording") ++missing;
        Outcome o;
        o.status = m.status;
        o.time_ms = m.time_ms;
        if (!by_time && o.status == TrialStatus::kOk) {
          o.time_ms = objective == "energy" ? m.energy_j : m.energy_j * m.time_ms * 1e-3;
          if (!std::isfinite(o.time_ms)) {
            o.status = TrialStatus::kLaunchFailed;
            ++without_energy;
          }
        }
        return o;
      });
  s.kernel = recording.kernel_name;
  s.device = recording.device_name;
  s.notes = recording.notes;
  s.notes.insert(s.notes.end(), target.notes.begin(), target.notes.end());
  if (without_energy > 0)
    s.notes.push_back(
        fmt::format("warning: {}: {} configurations have no recorded energy (failures "
                    "to the {} objective)",
                    s.name, without_energy, objective));
  if (missing > 0)
    s.notes.push_back(
        fmt::format("warning: {}: {} of {} valid configurations are not in the recording (answered "
                    "invalid)",
                    s.name, missing, s.configs.size()));
  std::size_t recorded_outside = 0;
  {
    // Recorded configurations the space does not hold tell of restrictions that do not match.
    std::unordered_set<std::string> in_space;
    for (const auto& c : s.configs) {
      std::vector<Value> v;
      for (const auto& p : recording.params)
        v.push_back(s.space->value(c, *s.space->find_param(p.name)));
      in_space.insert(recording_key(v));
    }
    for (const auto& t : recording.trials)
      if (!in_space.count(recording_key(t.values))) ++recorded_outside;
  }
  if (recorded_outside > 0)
    s.notes.push_back(fmt::format("warning: {}: {} recorded configurations are outside the space",
                                  s.name, recorded_outside));
  return s;
}

double expected_random_best(const std::vector<double>& sorted, std::uint64_t draws) {
  const std::size_t n = sorted.size();
  if (n == 0 || draws == 0) return kNaN;
  if (draws >= n) return sorted.front();
  // E[min] = v_1 + sum_{i>=2} (v_i - v_{i-1}) P(min rank >= i), and
  // P(min rank >= i) = C(n-i+1, b) / C(n, b), a running product.
  const double b = static_cast<double>(draws);
  double expected = sorted[0];
  double p = 1.0;
  for (std::size_t i = 2; i <= n; ++i) {
    const double remaining = static_cast<double>(n - i + 2);  // n - (i - 1) + 1
    if (remaining - b <= 0) break;
    p *= (remaining - b) / remaining;
    if (p < 1e-17) break;
    expected += (sorted[i - 1] - sorted[i - 2]) * p;
  }
  return expected;
}

BenchRun run_strategy(const BenchSpace& space, const std::string& name, std::uint64_t seed,
                      std::uint64_t evaluations, const BenchOptions& options) {
  auto strategy = make_strategy(name);
  return run_strategy(space, *strategy, seed, evaluations, options);
}

BenchRun run_strategy(const BenchSpace& space, Strategy& s, std::uint64_t seed,
                      std::uint64_t evaluations, const BenchOptions& options) {
  BenchRun run;
  run.best.assign(evaluations, kNaN);
  std::optional<TransferSearch> transfer;
  Strategy* strategy = &s;
  if (!space.transfer.empty())
    strategy = &transfer.emplace(s, space.transfer, space.transfer_opening);
  StrategyContext context;
  context.space = space.space.get();
  context.seed = seed;
  context.budget = evaluations;
  context.options = options.strategy_options;
  strategy->start(context);

  std::vector<std::uint8_t> seen(space.configs.size(), 0);
  std::unordered_set<Config, ConfigHash>
      seen_outside;  // proposals that are not valid configurations
  const std::uint64_t cap = std::max<std::uint64_t>(1, options.proposal_factor * evaluations);
  double current = kNaN;
  run.stopped = "budget";
  while (run.evaluations < evaluations) {
    if (strategy->exhausted()) {
      run.stopped = "exhausted";
      break;
    }
    if (run.proposals >= cap) {
      run.stopped = "proposal cap";
      break;
    }
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(
        std::max<std::size_t>(options.batch, 1), evaluations - run.evaluations));
    const std::vector<Config> configs = strategy->ask(want);
    if (configs.empty()) {
      // Every proposal is told at once, so nothing is outstanding that could change its mind.
      run.stopped = "no proposal";
      break;
    }
    for (const Config& c : configs) {
      ++run.proposals;
      Outcome o;
      bool duplicate = false;
      if (auto it = space.index.find(c); it != space.index.end()) {
        o = space.outcomes[it->second];
        duplicate = seen[it->second] != 0;
        seen[it->second] = 1;
      } else {
        o.status = TrialStatus::kInvalid;  // not a valid configuration of the space
        duplicate = !seen_outside.insert(c).second;
      }
      if (duplicate) {
        ++run.duplicates;
        o.from_cache = true;
      } else if (run.evaluations < evaluations) {
        if (o.status == TrialStatus::kOk && (std::isnan(current) || o.time_ms < current))
          current = o.time_ms;
        run.best[run.evaluations++] = current;
      }
      strategy->tell(c, o);
    }
  }
  // A run that ends early keeps what it found.
  for (std::uint64_t e = run.evaluations; e < evaluations; ++e) run.best[e] = current;
  return run;
}

namespace {

void check_options(const BenchOptions& options) {
  if (options.budgets.empty()) throw Error(ErrorKind::kUsage, "bench-strategies: no budgets");
  if (options.seeds == 0)
    throw Error(ErrorKind::kUsage, "bench-strategies: --seeds must be at least 1");
  if (!(options.cutoff > 0 && options.cutoff < 1))
    throw Error(ErrorKind::kUsage, "bench-strategies: the cut-off must lie between 0 and 1");
  for (std::uint64_t b : options.budgets)
    if (b == 0) throw Error(ErrorKind::kUsage, "bench-strategies: budgets must be positive");
  for (std::uint64_t w : options.stagnation)
    if (w == 0)
      throw Error(ErrorKind::kUsage, "bench-strategies: stagnation windows must be positive");
  for (const auto& name : options.strategies)
    (void)make_strategy(name);  // unknown names fail first
}

struct Prepared {
  const BenchSpace* space;
  std::size_t summary;  // its index in BenchReport::spaces
  double optimum, worst;
  std::vector<double> random;  // random[b - 1]: expected random best after b evaluations
  std::uint64_t cutoff_budget;
};

// The space's summary; the space joins `prepared` unless no configuration has a time.
SpaceSummary prepare_space(const BenchSpace& s, const BenchOptions& options,
                           std::vector<Prepared>& prepared) {
  SpaceSummary sum;
  sum.name = s.name;
  sum.kernel = s.kernel;
  sum.device = s.device;
  sum.configs = s.configs.size();
  sum.notes = s.notes;
  const std::vector<double> ok = ok_times(s);
  sum.ok = ok.size();
  if (ok.empty()) {
    sum.optimum_ms = sum.median_ms = sum.cutoff_ms = kNaN;
    sum.notes.push_back(fmt::format("{}: skipped, no configuration has a time", s.name));
    return sum;
  }
  Prepared p{&s, 0, ok.front(), ok.back(), {}, 0};
  sum.optimum_ms = p.optimum;
  sum.median_ms = s.median();
  sum.cutoff_ms = sum.median_ms - options.cutoff * (sum.median_ms - p.optimum);
  // Random search draws from every valid configuration; a failure counts as the slowest
  // time, the value a strategy's curve has before it finds a time.
  std::vector<double> population = ok;
  population.resize(s.configs.size(), p.worst);
  const std::uint64_t n = population.size();
  for (std::uint64_t b = 1; b <= n; ++b) {
    p.random.push_back(expected_random_best(population, b));
    if (p.random.back() <= sum.cutoff_ms) {
      p.cutoff_budget = b;
      break;
    }
  }
  sum.cutoff_budget = p.cutoff_budget;
  for (std::uint64_t b : options.budgets)
    sum.random_fraction.push_back(p.optimum / expected_random_best(population, b));
  prepared.push_back(std::move(p));
  return sum;
}

// The standardised curve (strategy - random) / (optimum - random) at every budget from 1 to the
// cut-off budget, averaged.
double standardised_score(const Prepared& p, const BenchRun& run) {
  double sum = 0;
  std::uint64_t terms = 0;
  for (std::uint64_t b = 1; b <= p.cutoff_budget; ++b) {
    const double random = p.random[b - 1];
    const double denominator = p.optimum - random;
    if (!(denominator < -1e-12 * std::fabs(p.optimum))) continue;  // random already optimal
    const double found = std::isfinite(run.best[b - 1]) ? run.best[b - 1] : p.worst;
    sum += (found - random) / denominator;
    ++terms;
  }
  return terms ? sum / static_cast<double>(terms) : 0.0;
}

// Where the stagnation stop with `window` would have ended `run` within `budget` evaluations:
// the evaluations it took. The best-so-far curve is enough, since an evaluation that does not
// improve on the best cannot count as an improvement either.
std::uint64_t stagnation_stop(const BenchRun& run, std::uint64_t window, std::uint64_t budget) {
  StagnationWatch watch(window);
  for (std::uint64_t e = 1; e <= budget; ++e) {
    watch.tell(run.best[e - 1]);
    if (watch.stagnant()) return e;
  }
  return budget;
}

// Adds one run to the stopped results (sums; divided by the seeds at the end).
void add_stopped(const Prepared& p, const BenchRun& run, const BenchOptions& options,
                 std::vector<StoppedResult>& stopped) {
  std::size_t i = 0;
  for (std::uint64_t window : options.stagnation)
    for (std::uint64_t budget : options.budgets) {
      StoppedResult& r = stopped[i++];
      r.window = window;
      r.budget = budget;
      const std::uint64_t e = stagnation_stop(run, window, budget);
      const double best = run.best[e - 1];
      const double fraction = std::isfinite(best) ? p.optimum / best : 0.0;
      r.fraction += fraction;
      r.evaluations += static_cast<double>(e);
      r.worst = std::min(r.worst, fraction);
    }
}

// One strategy on one space, over every seed.
StrategyResult bench_on_space(const std::string& name, const Prepared& p,
                              const BenchOptions& options, std::uint64_t max_budget) {
  const BenchSpace& s = *p.space;
  const auto t0 = std::chrono::steady_clock::now();
  const std::uint64_t length = std::max(max_budget, p.cutoff_budget);
  StrategyResult r;
  r.strategy = name;
  r.space = s.name;
  r.fraction.assign(options.budgets.size(), 0.0);
  std::vector<double> scores;
  double evaluations = 0, duplicates = 0;
  r.stopped.assign(options.stagnation.size() * options.budgets.size(), StoppedResult{});
  for (auto& st : r.stopped) st.worst = 1.0;
  for (std::uint64_t k = 0; k < options.seeds; ++k) {
    const BenchRun run = run_strategy(s, name, options.first_seed + k, length, options);
    add_stopped(p, run, options, r.stopped);
    for (std::size_t i = 0; i < options.budgets.size(); ++i) {
      const double best = run.best[options.budgets[i] - 1];
      r.fraction[i] += std::isfinite(best) ? p.optimum / best : 0.0;
    }
    scores.push_back(standardised_score(p, run));
    evaluations += static_cast<double>(run.evaluations);
    duplicates += static_cast<double>(run.duplicates);
    if (run.stopped == "proposal cap") ++r.capped;
  }
  const double seeds = static_cast<double>(options.seeds);
  for (double& f : r.fraction) f /= seeds;
  for (auto& st : r.stopped) {
    st.fraction /= seeds;
    st.evaluations /= seeds;
  }
  r.score = mean(scores);
  r.score_stddev = stddev(scores);
  r.evaluations = evaluations / seeds;
  r.duplicates = duplicates / seeds;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (options.progress)
    options.progress(
        fmt::format("{} on {}: score {:+.3f}, {:.1f} s", name, s.name, r.score, r.seconds));
  return r;
}

// A strategy's results over all spaces: the means of the per-space results.
StrategyResult overall(const std::string& name, const std::vector<StrategyResult>& per_space,
                       const BenchOptions& options) {
  StrategyResult all;
  all.strategy = name;
  all.space = "overall";
  all.fraction.assign(options.budgets.size(), 0.0);
  std::vector<double> scores, deviations;
  all.stopped.assign(options.stagnation.size() * options.budgets.size(), StoppedResult{});
  for (auto& st : all.stopped) st.worst = 1.0;
  for (const auto& r : per_space) {
    for (std::size_t i = 0; i < r.fraction.size(); ++i) all.fraction[i] += r.fraction[i];
    for (std::size_t i = 0; i < r.stopped.size(); ++i) {
      StoppedResult& st = all.stopped[i];
      st.window = r.stopped[i].window;
      st.budget = r.stopped[i].budget;
      st.fraction += r.stopped[i].fraction;
      st.evaluations += r.stopped[i].evaluations;
      st.worst = std::min(st.worst, r.stopped[i].worst);
    }
    scores.push_back(r.score);
    deviations.push_back(r.score_stddev);
    all.evaluations += r.evaluations;
    all.duplicates += r.duplicates;
    all.capped += r.capped;
    all.seconds += r.seconds;
  }
  if (!per_space.empty()) {
    const double n = static_cast<double>(per_space.size());
    for (double& f : all.fraction) f /= n;
    for (auto& st : all.stopped) {
      st.fraction /= n;
      st.evaluations /= n;
    }
    all.evaluations /= n;
    all.duplicates /= n;
  }
  all.score = scores.empty() ? kNaN : mean(scores);
  all.score_stddev = deviations.empty() ? kNaN : mean(deviations);
  return all;
}

}  // namespace

BenchReport bench_strategies(const std::vector<BenchSpace>& spaces, const BenchOptions& options) {
  check_options(options);

  BenchReport report;
  report.options = options;
  const std::uint64_t max_budget =
      *std::max_element(options.budgets.begin(), options.budgets.end());

  std::vector<Prepared> prepared;
  for (const BenchSpace& s : spaces) {
    const std::size_t before = prepared.size();
    report.spaces.push_back(prepare_space(s, options, prepared));
    if (prepared.size() > before) prepared.back().summary = report.spaces.size() - 1;
  }

  // per_space[strategy][prepared space]; a space a strategy fails on is left out of all.
  std::vector<std::vector<StrategyResult>> per_space(options.strategies.size());
  std::vector<bool> failed(prepared.size(), false);
  std::exception_ptr first_failure;
  for (std::size_t k = 0; k < options.strategies.size(); ++k) {
    per_space[k].resize(prepared.size());
    for (std::size_t i = 0; i < prepared.size(); ++i) {
      if (failed[i]) continue;
      try {
        per_space[k][i] = bench_on_space(options.strategies[k], prepared[i], options, max_budget);
      } catch (const std::exception& e) {
        // One space a strategy cannot run on must not cost the benchmark of the others.
        failed[i] = true;
        if (!first_failure) first_failure = std::current_exception();
        const std::string& name = options.strategies[k];
        const std::string what = e.what();
        report.failed.push_back(
            {prepared[i].space->name, what.rfind(name, 0) == 0 ? what : name + ": " + what});
      }
    }
  }
  if (!prepared.empty() && std::all_of(failed.begin(), failed.end(), [](bool f) { return f; }))
    std::rethrow_exception(first_failure);

  for (std::size_t k = 0; k < options.strategies.size(); ++k) {
    std::vector<StrategyResult> kept;
    for (std::size_t i = 0; i < prepared.size(); ++i)
      if (!failed[i]) kept.push_back(std::move(per_space[k][i]));
    StrategyResult all = overall(options.strategies[k], kept, options);
    for (auto& r : kept) report.results.push_back(std::move(r));
    report.results.push_back(std::move(all));
  }
  for (std::size_t i = prepared.size(); i-- > 0;)
    if (failed[i])
      report.spaces.erase(report.spaces.begin() + static_cast<std::ptrdiff_t>(prepared[i].summary));
  return report;
}

namespace {

std::string fixed(double v, int digits) {
  return std::isfinite(v) ? fmt::format("{:.{}f}", v, digits) : std::string("-");
}

std::string time_text(double ms) {
  return std::isfinite(ms) ? fmt::format("{:.4g}", ms) : std::string("-");
}

// Left-aligned first column, the others right-aligned, two spaces apart.
std::string table(const std::vector<std::vector<std::string>>& rows, std::size_t left_columns = 1) {
  std::vector<std::size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()), 0);
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line = " ";
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += " ";
      line += i < left_columns ? fmt::format("{:<{}}", row[i], width[i])
                               : fmt::format("{:>{}}", row[i], width[i]);
      if (i + 1 < row.size()) line += " ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

// The runs as the stagnation stop would have ended them: fraction and evaluations per budget,
// one table per window (none without --stagnation).
std::string format_stopped(const BenchReport& report) {
  const BenchOptions& o = report.options;
  std::string out;
  for (std::size_t w = 0; w < o.stagnation.size(); ++w) {
    out += fmt::format(
        "\nWith the stagnation stop after {} evaluations without an improvement beyond the noise "
        "(ktune/stagnation.h): fraction of the optimum when the run stopped / evaluations it "
        "took, mean over seeds, per budget\n",
        o.stagnation[w]);
    std::vector<std::string> header = {"strategy", "space"};
    for (std::uint64_t b : o.budgets) header.push_back(fmt::format("{}", b));
    std::vector<std::vector<std::string>> rows = {header};
    for (const auto& r : report.results) {
      std::vector<std::string> row = {r.strategy, r.space};
      for (std::size_t i = 0; i < o.budgets.size(); ++i) {
        const StoppedResult& st = r.stopped[w * o.budgets.size() + i];
        row.push_back(fmt::format("{}/{}", fixed(st.fraction, 3), fixed(st.evaluations, 0)));
      }
      rows.push_back(row);
    }
    out += table(rows, 2);
  }
  return out;
}

}  // namespace

std::string format_bench_report(const BenchReport& report) {
  const BenchOptions& o = report.options;
  std::string out = "Spaces (valid configurations; times in ms; cut-off = median - " +
                    fmt::format("{}", o.cutoff) + " x (median - optimum))\n";
  std::vector<std::vector<std::string>> rows = {{"space", "kernel", "device", "configs", "ok",
                                                 "optimum", "median", "cut-off", "cut-off budget"}};
  for (const auto& s : report.spaces)
    rows.push_back({s.name, s.kernel, s.device, std::to_string(s.configs), std::to_string(s.ok),
                    time_text(s.optimum_ms), time_text(s.median_ms), time_text(s.cutoff_ms),
                    std::to_string(s.cutoff_budget)});
  out += table(rows, 3);

  out += fmt::format(
      "\nFraction of the optimum reached (optimum / best found; mean over {} seeds) and score\n"
      "(best-so-far standardised against calculated random search, averaged over budgets 1 up to "
      "the "
      "cut-off budget)\n",
      o.seeds);
  std::vector<std::string> header = {"strategy", "space"};
  for (std::uint64_t b : o.budgets) header.push_back(fmt::format("{}", b));
  header.insert(header.end(), {"score", "sd", "evals", "dups"});
  rows = {header};
  for (const auto& s : report.spaces) {
    if (s.random_fraction.empty()) continue;
    std::vector<std::string> row = {"(random, calculated)", s.name};
    for (double f : s.random_fraction) row.push_back(fixed(f, 3));
    row.insert(row.end(), {"0", "", "", ""});
    rows.push_back(row);
  }
  for (const auto& r : report.results) {
    std::vector<std::string> row = {r.strategy, r.space};
    for (double f : r.fraction) row.push_back(fixed(f, 3));
    row.push_back(fixed(r.score, 3));
    row.push_back(fixed(r.score_stddev, 3));
    row.push_back(fixed(r.evaluations, 0));
    row.push_back(fixed(r.duplicates, 0));
    rows.push_back(row);
  }
  out += table(rows, 2);
  out += format_stopped(report);
  std::uint64_t capped = 0;
  for (const auto& r : report.results)
    if (r.space != "overall") capped += r.capped;
  if (capped > 0)
    out +=
        fmt::format("\n{} runs ended at the proposal cap ({} proposals per evaluation of budget)\n",
                    capped, o.proposal_factor);
  return out;
}

std::string bench_report_json(const BenchReport& report) {
  using nlohmann::json;
  const auto num = [](double v) { return std::isfinite(v) ? json(v) : json(); };
  const BenchOptions& o = report.options;
  json j;
  j["options"] = {{"strategies", o.strategies},
                  {"budgets", o.budgets},
                  {"seeds", o.seeds},
                  {"first_seed", o.first_seed},
                  {"cutoff", o.cutoff},
                  {"batch", o.batch},
                  {"proposal_factor", o.proposal_factor},
                  {"stagnation", o.stagnation},
                  {"strategy_options", o.strategy_options}};
  j["spaces"] = json::array();
  for (const auto& s : report.spaces) {
    json rf = json::array();
    for (double f : s.random_fraction) rf.push_back(num(f));
    j["spaces"].push_back({{"name", s.name},
                           {"kernel", s.kernel},
                           {"device", s.device},
                           {"configs", s.configs},
                           {"ok", s.ok},
                           {"optimum_ms", num(s.optimum_ms)},
                           {"median_ms", num(s.median_ms)},
                           {"cutoff_ms", num(s.cutoff_ms)},
                           {"cutoff_budget", s.cutoff_budget},
                           {"random_fraction", rf},
                           {"notes", s.notes}});
  }
  j["results"] = json::array();
  for (const auto& r : report.results) {
    json fractions = json::array();
    for (std::size_t i = 0; i < r.fraction.size(); ++i)
      fractions.push_back({{"budget", o.budgets[i]}, {"fraction", num(r.fraction[i])}});
    json stopped = json::array();
    for (const StoppedResult& st : r.stopped)
      stopped.push_back({{"window", st.window},
                         {"budget", st.budget},
                         {"fraction", num(st.fraction)},
                         {"evaluations", num(st.evaluations)},
                         {"worst", num(st.worst)}});
    j["results"].push_back({{"strategy", r.strategy},
                            {"space", r.space},
                            {"fractions", fractions},
                            {"score", num(r.score)},
                            {"score_stddev", num(r.score_stddev)},
                            {"evaluations", num(r.evaluations)},
                            {"duplicates", num(r.duplicates)},
                            {"capped_runs", r.capped},
                            {"seconds", r.seconds},
                            {"stopped", stopped}});
  }
  j["failed"] = json::array();
  for (const auto& f : report.failed)
    j["failed"].push_back({{"space", f.space}, {"error", f.error}});
  return j.dump(2);
}

}  // namespace ktune
