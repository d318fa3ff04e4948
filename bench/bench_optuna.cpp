// Overhead of the Optuna strategies per ask/tell (the module loaded the way ktune loads it:
// dlopen of libktune_optuna.so), at 100 and 1000 trials per sampler, and the cost of keeping
// proposals valid when only 1% of the Cartesian product is: Optuna asks per valid proposal and
// time per proposal, projection against rejection. The loop is simulated as in the tuner (asks
// ahead, answers duplicates from a map), and the objective costs nothing, so the figures are
// the strategy's own cost.
//
//   ./bench_optuna --benchmark_filter=Overhead   (TPE at 1000 trials takes about a minute)
#include <benchmark/benchmark.h>
#include <time.h>

#include <chrono>
#include <deque>
#include <iostream>
#include <map>

#include "ktune/error.h"
#include "ktune/strategy.h"
#include "strategies/optuna/strategy.h"

namespace {

using namespace ktune;
using Clock = std::chrono::steady_clock;

std::vector<Value> list(std::initializer_list<std::int64_t> xs) {
  std::vector<Value> v;
  for (auto x : xs) v.emplace_back(x);
  return v;
}

// A kernel-like space: 16384 configurations, about 40% valid.
const SearchSpace& kernel_space() {
  static const SearchSpace s({{"block_x", list({1, 2, 4, 8, 16, 32, 64, 128})},
                              {"block_y", list({1, 2, 4, 8, 16, 32, 64, 128})},
                              {"tile_x", list({1, 2, 4, 8})},
                              {"tile_y", list({1, 2, 4, 8})},
                              {"unroll", list({1, 2, 4, 8})},
                              {"layout", {Value(std::string("soa")), Value(std::string("aos"))}}},
                             {"32 <= block_x * block_y <= 1024", "tile_x * tile_y <= 32"});
  return s;
}

std::vector<Value> ten() { return list({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}); }

// 1% valid: in bands (a == b and c == d), or scattered like a hash.
const SearchSpace& diagonal_space() {
  static const SearchSpace s({{"a", ten()}, {"b", ten()}, {"c", ten()}, {"d", ten()}},
                             {"a == b", "c == d"});
  return s;
}
const SearchSpace& scattered_space() {
  static const SearchSpace s({{"a", ten()}, {"b", ten()}, {"c", ten()}, {"d", ten()}},
                             {"(a * 37 + b * 11 + c * 5 + d * 3) % 97 == 0"});
  return s;
}

double objective(const SearchSpace& space, const Config& c) {
  double t = 1.0;
  for (std::size_t i = 0; i < c.size(); ++i) {
    const double x =
        static_cast<double>(c[i]) / std::max<double>(1.0, space.params()[i].values.size() - 1);
    t += (x - (i % 2 ? 0.3 : 0.6)) * (x - (i % 2 ? 0.3 : 0.6));
  }
  return t;
}

// CPU time of this thread: Python runs on it, and unlike wall time it does not grow when other
// processes share the cores.
double thread_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct Result {
  double strategy_seconds = 0;      // wall time inside ask() and tell()
  double strategy_cpu_seconds = 0;  // the same, CPU time
  double last100_seconds = 0;       // wall time, for the last 100 tells
  double last100_cpu_seconds = 0;
  std::uint64_t tells = 0, measured = 0;
};

Result drive(Strategy& s, const SearchSpace& space, std::uint64_t budget) {
  Result r;
  std::map<Config, Outcome> db;
  std::deque<Config> queue;
  const auto timed = [&](auto&& f) {
    const auto t0 = Clock::now();
    const double c0 = thread_cpu_seconds();
    f();
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    const double dc = thread_cpu_seconds() - c0;
    r.strategy_seconds += dt;
    r.strategy_cpu_seconds += dc;
    if (budget - r.tells <= 100) {
      r.last100_seconds += dt;
      r.last100_cpu_seconds += dc;
    }
  };
  while (r.tells < budget) {
    while (queue.size() < 8 && !s.exhausted()) {
      const std::uint64_t left = budget - r.tells;
      const std::size_t want =
          std::min<std::uint64_t>(8 - queue.size(), left > queue.size() ? left - queue.size() : 0);
      if (want == 0) break;
      std::vector<Config> configs;
      timed([&] { configs = s.ask(want); });
      if (configs.empty()) break;
      for (auto& c : configs) queue.push_back(std::move(c));
    }
    if (queue.empty()) break;
    const Config c = queue.front();
    queue.pop_front();
    Outcome o;
    if (auto it = db.find(c); it != db.end()) {
      o = it->second;
      o.from_cache = true;
    } else {
      o.time_ms = objective(space, c);
      db[c] = o;
      ++r.measured;
    }
    timed([&] { s.tell(c, o); });
    ++r.tells;
  }
  return r;
}

std::unique_ptr<optuna::OptunaStrategy> make(const std::string& name) {
  auto s = make_strategy(name);
  return std::unique_ptr<optuna::OptunaStrategy>(static_cast<optuna::OptunaStrategy*>(s.release()));
}

bool have_optuna(benchmark::State& state) {
  try {
    static const std::string d = optuna::describe_python();
    state.SetLabel(d.substr(0, d.find(" (")) + ", " + d.substr(d.rfind("Optuna")));
    return true;
  } catch (const Error& e) {
    state.SkipWithError(e.what());
    return false;
  }
}

// Per-trial overhead of each sampler on the kernel-like space, with the strategy options given
// (optuna:tpe with cached=false is Optuna's TPESampler as it is, the baseline of ktune's).
void Overhead(benchmark::State& state, const std::string& name,
              const std::map<std::string, std::string>& options) {
  if (!have_optuna(state)) return;
  const auto trials = static_cast<std::uint64_t>(state.range(0));
  Result r;
  optuna::Stats stats;
  for (auto _ : state) {
    auto s = make(name);
    StrategyContext c;
    c.space = &kernel_space();
    c.seed = 1;
    c.options = options;
    const auto t0 = Clock::now();
    s->start(c);
    const double start_s = std::chrono::duration<double>(Clock::now() - t0).count();
    r = drive(*s, kernel_space(), trials);
    stats = s->stats();
    state.counters["start_ms"] = start_s * 1e3;
  }
  const double tells = static_cast<double>(r.tells),
               last = static_cast<double>(std::min<std::uint64_t>(100, r.tells));
  state.counters["ms_per_tell"] = r.strategy_seconds * 1e3 / tells;
  state.counters["cpu_ms_per_tell"] = r.strategy_cpu_seconds * 1e3 / tells;
  state.counters["ms_last100"] = r.last100_seconds * 1e3 / last;
  state.counters["cpu_ms_last100"] = r.last100_cpu_seconds * 1e3 / last;
  state.counters["optuna_share"] = stats.optuna_seconds / r.strategy_seconds;
  state.counters["asks_per_proposal"] =
      static_cast<double>(stats.asks) / static_cast<double>(stats.proposed);
  state.counters["new"] = static_cast<double>(r.measured);
}

// Asks per valid proposal and time per proposal at 1% valid.
void OnePercent(benchmark::State& state, const std::string& name, const SearchSpace* space,
                const std::string& constraints) {
  if (!have_optuna(state)) return;
  // Rejection asks about 100 times per proposal; fewer proposals keep it to minutes.
  const std::uint64_t budget = constraints == "reject" ? 20 : 100;
  Result r;
  optuna::Stats stats;
  for (auto _ : state) {
    auto s = make(name);
    StrategyContext c;
    c.space = space;
    c.seed = 1;
    c.options["constraints"] = constraints;
    // TPE concentrates where the valid points it knows are, and nearly all their neighbours are
    // invalid: without a cap, one ask() can take thousands of Optuna asks.
    if (constraints == "reject") c.options["max_rejections"] = "2000";
    s->start(c);
    r = drive(*s, *space, budget);
    stats = s->stats();
  }
  state.counters["asks_per_proposal"] =
      static_cast<double>(stats.asks) /
      static_cast<double>(std::max<std::uint64_t>(1, stats.proposed));
  state.counters["ms_per_proposal"] =
      r.strategy_seconds * 1e3 / static_cast<double>(std::max<std::uint64_t>(1, stats.proposed));
  state.counters["cpu_ms_per_proposal"] =
      r.strategy_cpu_seconds * 1e3 /
      static_cast<double>(std::max<std::uint64_t>(1, stats.proposed));
  state.counters["new"] = static_cast<double>(r.measured);
  state.counters["tells"] = static_cast<double>(r.tells);
  state.counters["answered"] = static_cast<double>(stats.answered);
  state.counters["rejected"] = static_cast<double>(stats.rejected);
  state.counters["neighbours"] = static_cast<double>(stats.neighbours);
}

const int kRegistered = [] {
  for (const char* name : {"optuna:tpe", "optuna:cmaes", "optuna:nsgaii", "optuna:qmc",
                           "optuna:random", "optuna:grid"})
    benchmark::RegisterBenchmark((std::string("Overhead/") + name).c_str(), Overhead,
                                 std::string(name), std::map<std::string, std::string>{})
        ->Arg(100)
        ->Arg(1000)
        ->Iterations(1)
        ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("Overhead/optuna:tpe,cached=false", Overhead,
                               std::string("optuna:tpe"),
                               std::map<std::string, std::string>{{"cached", "false"}})
      ->Arg(100)
      ->Arg(1000)
      ->Iterations(1)
      ->Unit(benchmark::kMillisecond);
  for (const char* name :
       {"optuna:tpe", "optuna:cmaes", "optuna:nsgaii", "optuna:qmc", "optuna:random"})
    for (const auto& [label, space] :
         {std::pair{"diagonal", &diagonal_space()}, std::pair{"scattered", &scattered_space()}})
      for (const char* constraints : {"project", "reject"})
        benchmark::RegisterBenchmark(
            (std::string("OnePercent/") + name + "/" + label + "/" + constraints).c_str(),
            OnePercent, std::string(name), space, std::string(constraints))
            ->Iterations(1)
            ->Unit(benchmark::kMillisecond);
  return 0;
}();

}  // namespace

BENCHMARK_MAIN();
