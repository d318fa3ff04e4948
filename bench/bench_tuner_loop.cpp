// Overhead of the tuning loop itself: strategy, database writes and lookups, bookkeeping, with a
// backend that answers instantly. Trials per second bound how fast any real run can go.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>

#include "ktune/registry.h"
#include "ktune/strategy.h"
#include "ktune/tuner.h"

namespace {

class InstantBackend final : public ktune::Backend {
 public:
  std::string name() const override { return "instant"; }
  ktune::DeviceInfo device() const override {
    ktune::DeviceInfo d;
    d.name = "Instant";
    d.arch = "sm_90";
    return d;
  }
  bool needs_compilation() const override { return false; }
  void prepare(const ktune::KernelInstance&, const ktune::MeasureOptions&) override {}
  ktune::Measurement evaluate(const ktune::Config& c, const ktune::CompileResult*) override {
    ktune::Measurement m;
    m.time_ms = 1.0 + static_cast<double>(c[0]) * 0.01;
    m.samples_ms.assign(32, m.time_ms);
    return m;
  }
  std::vector<ktune::Measurement> retime(const std::vector<ktune::RetimeCandidate>& c,
                                         int) override {
    return std::vector<ktune::Measurement>(c.size());
  }
};

void BM_LoopTrials(benchmark::State& state) {
  ktune::Registry registry;
  ktune::register_builtin_kernels(registry);
  const ktune::KernelInstance instance(registry.get("reduce"), {{"n", 1 << 25}},
                                       ktune::DeviceLimits::for_arch(90));
  const auto dir =
      std::filesystem::temp_directory_path() / ("ktune-bench-loop-" + std::to_string(::getpid()));
  std::uint64_t trials = 0;
  for (auto _ : state) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    ktune::Store store = ktune::Store::open(dir / "loop.db");
    InstantBackend backend;
    auto strategy = ktune::make_strategy("brute_force");
    ktune::TuneOptions options;
    options.retime_top = 0;
    options.budget.evaluations = static_cast<std::uint64_t>(state.range(0));
    trials += ktune::tune(instance, backend, store, *strategy, options, nullptr).trials;
  }
  std::filesystem::remove_all(dir);
  state.counters["trials_per_s"] =
      benchmark::Counter(static_cast<double>(trials), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_LoopTrials)->Arg(2000)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
