// Render time of `ktune report` over a database with thousands of trials: reading the runs,
// the analysis, and the HTML (inline SVG) and Markdown output. The database is synthetic but
// shaped like a real night of tuning: the built-in `reduce` kernel's real search space on two
// devices, random / TPE-like / brute-force runs, compile failures with logs, wrong results,
// resource failures, re-timed finalists and stored bests, with simulated timestamps.
//
//   bench_report                       the benchmark (5000 and 20000 trials)
//   bench_report --sample=DIR          write DIR/sample.db, sample.html and sample.md, then exit
#include <benchmark/benchmark.h>
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "ktune/registry.h"
#include "ktune/report.h"
#include "ktune/tuner.h"

namespace {

namespace fs = std::filesystem;
using namespace ktune;

std::string iso(double epoch_s) {
  const auto whole = static_cast<std::time_t>(std::floor(epoch_s));
  const int ms = static_cast<int>(std::lround((epoch_s - std::floor(epoch_s)) * 1000)) % 1000;
  std::tm tm{};
  gmtime_r(&whole, &tm);
  char buf[40];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  std::snprintf(out, sizeof(out), "%s.%03dZ", buf, ms);
  return out;
}

struct Gpu {
  DeviceRecord record;
  double bandwidth_gbs;  // sustained DRAM bandwidth of the model
  double speed;          // everything else relative to the H100
};

std::vector<Gpu> gpus() {
  Gpu h100;
  h100.record.name = "NVIDIA H100 80GB HBM3";
  h100.record.arch = "sm_90";
  h100.record.cc_major = 9;
  h100.record.sm_count = 132;
  h100.record.memory_bytes = 85520809984;
  h100.record.l2_bytes = 52428800;
  h100.record.driver_version = 13000;
  h100.record.nvrtc_version = "13.0";
  h100.bandwidth_gbs = 3000;
  h100.speed = 1.0;
  Gpu h200 = h100;
  h200.record.name = "NVIDIA H200";
  h200.record.memory_bytes = 150754820096;
  h200.record.l2_bytes = 62914560;
  h200.bandwidth_gbs = 4300;
  h200.speed = 1.08;
  return {h100, h200};
}

// A performance model of the reduction steps: bandwidth-bound, with efficiencies per
// parameter value, a few interactions, and failures where real kernels fail.
struct Model {
  const KernelInstance& instance;
  double bytes = 0;

  std::map<std::string, std::int64_t> values(const Config& c) const {
    std::map<std::string, std::int64_t> v;
    const SearchSpace& s = instance.space();
    for (std::size_t i = 0; i < s.size(); ++i) v[s.params()[i].name] = s.value(c, i).as_int();
    return v;
  }

  static double noise(std::uint64_t h, double amount) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return std::exp(amount * (static_cast<double>(h % 20001) / 10000.0 - 1.0));
  }

  struct Params {
    int bs, var, ept, unroll, maxr, lb;
  };
  struct Resources {
    int regs, spill, blocks;
  };

  Params params(const Config& c) const {
    auto v = values(c);
    const int bs = static_cast<int>(v["block_size"]), var = static_cast<int>(v["variant"]);
    const int ept = static_cast<int>(v["elements_per_thread"]),
              unroll = static_cast<int>(v["unroll"]);
    const int maxr = static_cast<int>(v["maxrregcount"]), lb = static_cast<int>(v["launch_bounds"]);
    return {bs, var, ept, unroll, maxr, lb};
  }

  // Registers, spills and occupancy as ptxas and the occupancy calculator would give them.
  static Resources resources(const Params& p, const Gpu& gpu, std::uint64_t salt, TrialRecord& t) {
    const int bs = p.bs, var = p.var, ept = p.ept, unroll = p.unroll, maxr = p.maxr, lb = p.lb;
    int regs = 14 + (var >= 7 ? 2 * unroll + ept / 2 : 4) + (var == 9 ? 6 : 0);
    int spill = 0;
    if (maxr > 0 && regs > maxr) spill = (regs - maxr) * 4, regs = maxr;
    if (lb > 0) regs = std::min(regs, 65536 / (lb * bs));
    t.registers = regs;
    t.spill_bytes = spill;
    t.local_bytes = spill;
    t.static_shared_bytes = 0;
    t.dynamic_shared_bytes = std::max(bs, 64) * 4;
    t.max_threads_per_block = 1024;
    const int blocks_by_threads = 2048 / bs, blocks_by_regs = 65536 / std::max(1, regs * bs);
    const int blocks = std::max(0, std::min({blocks_by_threads, blocks_by_regs, 32}));
    t.occupancy = static_cast<double>(blocks * bs) / 2048.0;
    t.arch = gpu.record.arch;
    t.compile_options = "-std=c++17 --gpu-architecture=sm_90 --ptxas-options=-v" +
                        (maxr ? " --maxrregcount=" + std::to_string(maxr) : std::string());
    t.compile_ms = 90 + 25 * unroll + 3 * ept + 40 * noise(salt * 7 + 1, 0.5);
    t.cubin_hash = std::to_string(std::hash<std::string>{}(t.config_key));
    return {regs, spill, blocks};
  }

  // The vector-load variant's static_assert; true (the trial a compile failure) when it fires.
  static bool compile_fails(const Params& p, TrialRecord& t) {
    const int bs = p.bs, var = p.var, ept = p.ept, unroll = p.unroll;
    if (!(var == 9 && ept * unroll > 128)) return false;
    t.status = TrialStatus::kCompileFailed;
    t.compile_log =
        "reduce.cu(142): error: static assertion failed with \"vector loads: ELEMENTS_PER_THREAD "
        "* UNROLL must be "
        "at most 128\"\n    static_assert(ELEMENTS_PER_THREAD * UNROLL <= 128,\n    ^\n          "
        "detected during "
        "instantiation of \"void reduce<BLOCK_SIZE,VARIANT,ELEMENTS_PER_THREAD,T>(const T *, T "
        "*, unsigned int) "
        "[with BLOCK_SIZE=" +
        std::to_string(bs) + "U, VARIANT=9, ELEMENTS_PER_THREAD=" + std::to_string(ept) +
        ", T=int]\"\n\n1 error detected in the compilation of \"reduce.cu\".\n";
    t.error =
        "reduce.cu 'reduce<" + std::to_string(bs) + ", 9, " + std::to_string(ept) +
        ", int>' sm_90: NVRTC_ERROR_COMPILATION: reduce.cu(142): error: static assertion failed";
    t.registers = -1;
    t.occupancy = -1;
    return true;
  }

  // Failures of a compiled kernel; true (the trial's status and error set) when it fails.
  static bool run_fails(const Params& p, const Resources& r, std::uint64_t salt, TrialRecord& t) {
    const int bs = p.bs, var = p.var, ept = p.ept, maxr = p.maxr, lb = p.lb;
    if (r.blocks == 0 || (lb == 4 && bs >= 512 && maxr == 0 && r.regs > 24)) {
      t.status = TrialStatus::kResourcesExceeded;
      t.error = "launch: too many resources requested for launch";
      t.eval_ms = 40;
      return true;
    }
    if (var == 5 && bs == 32) {
      // Step 5 unrolls the last warp assuming at least 64 threads: a real bug of the lecture code.
      t.status = TrialStatus::kWrongResult;
      t.error = "output differs from the reference: out[0] = 1073487113, expected 1073741793";
      t.eval_ms = 60;
      return true;
    }
    if (var <= 2 && bs == 32 && ept == 1 && noise(salt, 1) > 2.2) {
      t.status = TrialStatus::kTimeout;
      t.error = "no result within 20.0 s; the worker was killed and will be restarted";
      t.eval_ms = 20000;
      return true;
    }
    return false;
  }

  // The fraction of the DRAM bandwidth the configuration reaches.
  static double efficiency(const Params& p, const Resources& r, double occupancy) {
    const int bs = p.bs, var = p.var, ept = p.ept, unroll = p.unroll, lb = p.lb;
    static const std::map<int, double> kVariant = {{1, 0.10}, {2, 0.17}, {3, 0.28},
                                                   {4, 0.52}, {5, 0.63}, {6, 0.70},
                                                   {7, 0.86}, {8, 0.91}, {9, 0.95}};
    static const std::map<int, double> kBlock = {{32, 0.52}, {64, 0.74},  {128, 0.92},
                                                 {256, 1.0}, {512, 0.98}, {1024, 0.90}};
    static const std::map<int, double> kEpt = {{1, 0.55}, {2, 0.72},   {4, 0.88},
                                               {8, 1.0},  {16, 0.985}, {32, 0.93}};
    static const std::map<int, double> kUnroll = {{1, 0.95}, {2, 1.0}, {4, 1.0}, {8, 0.975}};
    double eff =
        kVariant.at(var) * kBlock.at(bs) * (var >= 7 ? kEpt.at(ept) : 1.0) * kUnroll.at(unroll);
    if (r.spill > 0) eff *= 0.8;
    if (lb > 0) eff *= lb == 2 ? 1.01 : 0.995;
    eff *= std::min(1.0, 0.55 + occupancy * 0.6);
    return eff;
  }

  // Samples around `ms` and their statistics.
  void fill_timing(double ms, std::uint64_t salt, TrialRecord& t) const {
    t.status = TrialStatus::kOk;
    t.sample_count = 12 + static_cast<int>(salt % 9);
    for (int i = 0; i < t.sample_count; ++i)
      t.samples_ms.push_back(ms * noise(salt * 1000 + i, 0.01));
    std::vector<double> s = t.samples_ms;
    std::sort(s.begin(), s.end());
    t.time_ms = s[s.size() / 2];
    t.time_min_ms = s.front();
    double sum = 0;
    for (double x : s) sum += x;
    t.time_mean_ms = sum / s.size();
    t.time_spread = (s[s.size() * 3 / 4] - s[s.size() / 4]) / t.time_ms;
    t.gbps = bytes / (t.time_ms * 1e-3) / 1e9;
    t.gflops = std::nan("");
    t.eval_ms = 30 + t.sample_count * ms * 2 + 25 * noise(salt, 0.3);
  }

  void evaluate(const Config& c, const Gpu& gpu, std::uint64_t salt, TrialRecord& t) const {
    const Params p = params(c);
    const Resources r = resources(p, gpu, salt, t);
    if (compile_fails(p, t)) return;
    t.compile_log = "ptxas info    : Compiling entry function '_Z6reduceILj" +
                    std::to_string(p.bs) + "ELi" + std::to_string(p.var) + "ELi" +
                    std::to_string(p.ept) + "EiEvPKT2_PS0_j' for 'sm_90'\nptxas info    : Used " +
                    std::to_string(r.regs) + " registers, " + std::to_string(r.spill) +
                    " bytes spill stores\n";
    if (run_fails(p, r, salt, t)) return;
    const double eff = efficiency(p, r, t.occupancy);
    const double ms = bytes / (gpu.bandwidth_gbs * 1e9 * std::min(eff, 0.97)) * 1e3 / gpu.speed *
                          noise(salt * 31 + 7, 0.015) +
                      0.004;
    fill_timing(ms, salt, t);
  }
};

struct RunPlan {
  std::size_t gpu;
  std::string strategy;
  std::size_t evaluations;
  std::uint64_t seed;
};

// Writes simulated runs into a store: the kernel, problem and devices once, then run by run on a
// simulated clock.
class RunWriter {
 public:
  RunWriter(const fs::path& path, const KernelInstance& instance, const Problem& problem,
            const std::vector<Config>& all, const Model& model, const std::vector<Gpu>& devices)
      : store_(Store::open(path)),
        space_(instance.space()),
        all_(all),
        model_(model),
        devices_(devices) {
    kernel_id_ = store_.upsert_kernel(kernel_record(instance));
    ProblemRecord pr;
    pr.kernel_name = "reduce";
    pr.key = instance.problem_key();
    pr.json = "{\"n\": " + std::to_string(problem.at("n")) + "}";
    problem_id_ = store_.upsert_problem(pr);
    for (const auto& g : devices_) device_ids_.push_back(store_.upsert_device(g.record));
  }

  void add_run(const RunPlan& plan) {
    const Gpu& gpu = devices_[plan.gpu];
    const std::int64_t run_id = store_.begin_run(run_record(plan, gpu));
    const double start = clock_;

    std::mt19937_64 rng(plan.seed * 7919 + plan.gpu);
    const std::size_t n = std::min(plan.evaluations, all_.size());
    const std::map<std::string, TrialRecord> ok = run_search(plan, gpu, run_id, n, rng);
    const TrialRecord winner = retime_leaders(ok, rng);
    if (winner.id) store_.set_best(winner.id);
    store_.finish_run(run_id, ktune::RunStatus::kFinished,
                      "{\"trials\": " + std::to_string(n) + "}");
    run_times_.emplace_back(run_id, start, clock_ + 0.5);
    clock_ += 120;
  }

  std::size_t trials() const { return trials_; }
  // (run id, start, end) of each run on the simulated clock.
  const std::vector<std::tuple<std::int64_t, double, double>>& run_times() const {
    return run_times_;
  }

 private:
  RunRecord run_record(const RunPlan& plan, const Gpu& gpu) const {
    RunRecord run;
    run.kernel_id = kernel_id_;
    run.device_id = device_ids_[plan.gpu];
    run.problem_id = problem_id_;
    run.backend = "cuda";
    run.strategy = plan.strategy;
    run.strategy_options = plan.strategy == "optuna:tpe" ? "{\"n_startup_trials\":\"20\"}" : "{}";
    run.budget = "{\"evaluations\": " + std::to_string(plan.evaluations) + "}";
    run.ktune_version = KTUNE_VERSION;
    run.nvrtc_version = "13.0";
    run.driver_version = gpu.record.driver_version;
    run.host = plan.gpu == 0 ? "gpu-node-07" : "gpu-node-12";
    run.seed = plan.seed;
    run.command_line = "ktune tune reduce -p n=2**28 --strategy " + plan.strategy +
                       " --budget-evals " + std::to_string(plan.evaluations) + " --seed " +
                       std::to_string(plan.seed);
    return run;
  }

  // Proposes 24 unseen candidates, keeps the one the model (with noise) likes best: a crude
  // stand-in for a model-based sampler, so its curve converges faster than random.
  std::size_t tpe_pick(const std::vector<Config>& order, const std::vector<bool>& used,
                       const Gpu& gpu, std::size_t k, std::mt19937_64& rng) const {
    std::size_t pick = 0;
    double best_guess = INFINITY;
    for (int tries = 0; tries < 24; ++tries) {
      std::size_t i = rng() % order.size();
      while (used[i]) i = (i + 1) % order.size();
      TrialRecord probe;
      probe.config_key = space_.key(order[i]);
      model_.evaluate(order[i], gpu, i, probe);
      const double guess =
          (probe.status == TrialStatus::kOk ? probe.time_ms : 50.0) *
          Model::noise(rng(), 0.35 * (1.0 - std::min(1.0, static_cast<double>(k) / 400)));
      if (guess < best_guess) best_guess = guess, pick = i;
    }
    return pick;
  }

  // Evaluates `n` configurations in the strategy's order; returns the ok trials by key.
  std::map<std::string, TrialRecord> run_search(const RunPlan& plan, const Gpu& gpu,
                                                std::int64_t run_id, std::size_t n,
                                                std::mt19937_64& rng) {
    std::vector<Config> order = all_;
    if (plan.strategy != "brute_force") std::shuffle(order.begin(), order.end(), rng);
    std::vector<bool> used(order.size(), false);
    std::map<std::string, TrialRecord> ok;
    std::size_t cursor = 0;
    for (std::size_t k = 0; k < n; ++k) {
      std::size_t pick = 0;
      if (plan.strategy == "optuna:tpe" && k >= 20) {
        pick = tpe_pick(order, used, gpu, k, rng);
      } else {
        while (used[cursor]) ++cursor;
        pick = cursor;
      }
      used[pick] = true;
      TrialRecord t;
      t.run_id = run_id;
      t.kernel_id = kernel_id_;
      t.device_id = device_ids_[plan.gpu];
      t.problem_id = problem_id_;
      t.config_key = space_.key(order[pick]);
      t.config_json = space_.to_json(order[pick]).dump();
      t.time_ms = t.time_min_ms = t.time_mean_ms = t.time_spread = t.gbps = t.gflops = std::nan("");
      model_.evaluate(order[pick], gpu,
                      std::hash<std::string>{}(t.config_key) + plan.gpu * 17 + plan.seed, t);
      clock_ += (t.compile_ms * 0.35 + t.eval_ms) / 1000.0 + 0.02;
      t.created_at = iso(clock_);
      t.id = store_.add_trial(t);
      ++trials_;
      if (t.status == TrialStatus::kOk) ok[t.config_key] = t;
    }
    return ok;
  }

  // Re-times the five fastest, interleaved; returns the fastest of the re-timing (id 0: none).
  TrialRecord retime_leaders(const std::map<std::string, TrialRecord>& ok, std::mt19937_64& rng) {
    std::vector<TrialRecord> leaders;
    for (auto& [key, t] : ok) leaders.push_back(t);
    std::sort(leaders.begin(), leaders.end(),
              [](const TrialRecord& a, const TrialRecord& b) { return a.time_ms < b.time_ms; });
    leaders.resize(std::min<std::size_t>(leaders.size(), 5));
    TrialRecord winner;
    for (std::size_t i = 0; i < leaders.size(); ++i) {
      TrialRecord r = leaders[i];
      r.id = 0;
      r.error = "re-timed interleaved with the other finalists";
      r.samples_ms.assign(10, 0);
      for (int s = 0; s < 10; ++s)
        r.samples_ms[s] = leaders[i].time_ms * Model::noise(rng(), 0.012);
      std::vector<double> s = r.samples_ms;
      std::sort(s.begin(), s.end());
      r.sample_count = 10;
      r.time_ms = (s[4] + s[5]) / 2;
      r.time_min_ms = s.front();
      r.time_spread = (s[7] - s[2]) / r.time_ms;
      r.gbps = model_.bytes / (r.time_ms * 1e-3) / 1e9;
      clock_ += 0.4;
      r.created_at = iso(clock_);
      r.id = store_.add_trial(r);
      ++trials_;
      if (winner.id == 0 || r.time_ms < winner.time_ms) winner = r;
    }
    return winner;
  }

  Store store_;
  const SearchSpace& space_;
  const std::vector<Config>& all_;
  const Model& model_;
  const std::vector<Gpu>& devices_;
  std::int64_t kernel_id_ = 0, problem_id_ = 0;
  std::vector<std::int64_t> device_ids_;
  double clock_ = 1773525600.0;  // 2026-03-14T22:00:00Z, a Saturday night
  std::size_t trials_ = 0;
  std::vector<std::tuple<std::int64_t, double, double>> run_times_;
};

// The store dates runs by the real clock; move them to the simulated one.
void redate_runs(const fs::path& path,
                 const std::vector<std::tuple<std::int64_t, double, double>>& run_times) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) == SQLITE_OK) {
    for (const auto& [id, start, end] : run_times) {
      const std::string sql = "UPDATE runs SET started_at = '" + iso(start) + "', finished_at = '" +
                              iso(end) + "' WHERE id = " + std::to_string(id);
      sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
    }
  }
  sqlite3_close(db);
}

// Writes the runs of `plans` into a fresh database at `path`; returns the trial count.
std::size_t build_database(const fs::path& path, const std::vector<RunPlan>& plans) {
  fs::remove(path);
  fs::remove(path.string() + "-wal");
  fs::remove(path.string() + "-shm");
  Registry registry;
  register_builtin_kernels(registry);
  const Problem problem = {{"n", std::int64_t{1} << 28}};
  const KernelInstance instance(registry.get("reduce"), problem, DeviceLimits::for_arch(90));
  const std::vector<Config> all = instance.space().enumerate();
  Model model{instance, instance.bytes(all.front())};
  if (!std::isfinite(model.bytes)) model.bytes = 4.0 * static_cast<double>(problem.at("n"));
  const auto devices = gpus();

  std::size_t trials = 0;
  std::vector<std::tuple<std::int64_t, double, double>> run_times;
  {
    RunWriter writer(path, instance, problem, all, model, devices);
    for (const RunPlan& plan : plans) writer.add_run(plan);
    trials = writer.trials();
    run_times = writer.run_times();
  }
  redate_runs(path, run_times);
  return trials;
}

std::vector<RunPlan> plans_for(std::size_t trials) {
  // Four runs over the two devices, sized to give about `trials` evaluations.
  const std::size_t each = std::max<std::size_t>(trials / 4, 50);
  return {{0, "random", each, 1},
          {0, "optuna:tpe", each, 2},
          {1, "brute_force", each, 3},
          {1, "random", each, 4}};
}

const fs::path& database_for(std::size_t trials, std::size_t* count) {
  static std::map<std::size_t, std::pair<fs::path, std::size_t>> made;
  auto it = made.find(trials);
  if (it == made.end()) {
    const fs::path p =
        fs::temp_directory_path() /
        ("ktune-bench-report-" + std::to_string(::getpid()) + "-" + std::to_string(trials) + ".db");
    it = made.emplace(trials, std::make_pair(p, build_database(p, plans_for(trials)))).first;
  }
  *count = it->second.second;
  return it->second.first;
}

void BM_ReportHtml(benchmark::State& state) {
  std::size_t trials = 0;
  const fs::path& db = database_for(static_cast<std::size_t>(state.range(0)), &trials);
  std::size_t bytes = 0;
  for (auto _ : state) {
    Store store = Store::open(db, Store::Mode::kReadOnly);
    ReportOptions options;
    options.generated_at = "2026-03-15T08:00:00.000Z";
    const Report report = build_report(store, {}, options);
    const std::string html = render_html(report);
    bytes = html.size();
    benchmark::DoNotOptimize(html.data());
  }
  state.counters["trials"] = static_cast<double>(trials);
  state.counters["html_MB"] = static_cast<double>(bytes) / 1e6;
}
BENCHMARK(BM_ReportHtml)->Arg(5000)->Arg(20000)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ReportMarkdown(benchmark::State& state) {
  std::size_t trials = 0;
  const fs::path& db = database_for(static_cast<std::size_t>(state.range(0)), &trials);
  for (auto _ : state) {
    Store store = Store::open(db, Store::Mode::kReadOnly);
    const std::string md = render_markdown(build_report(store, {}));
    benchmark::DoNotOptimize(md.data());
  }
  state.counters["trials"] = static_cast<double>(trials);
}
BENCHMARK(BM_ReportMarkdown)->Arg(20000)->Unit(benchmark::kMillisecond)->UseRealTime();

// The parts of one 20000-trial render, for finding where the time goes.
void BM_ReportAnalysisOnly(benchmark::State& state) {
  std::size_t trials = 0;
  const fs::path& db = database_for(static_cast<std::size_t>(state.range(0)), &trials);
  Store store = Store::open(db, Store::Mode::kReadOnly);
  for (auto _ : state) benchmark::DoNotOptimize(build_report(store, {}).trials);
  state.counters["trials"] = static_cast<double>(trials);
}
BENCHMARK(BM_ReportAnalysisOnly)->Arg(20000)->Unit(benchmark::kMillisecond)->UseRealTime();

int write_sample(const fs::path& dir) {
  fs::create_directories(dir);
  const fs::path db = dir / "sample.db";
  const std::size_t trials = build_database(db, {{0, "random", 600, 1},
                                                 {0, "optuna:tpe", 600, 2},
                                                 {0, "brute_force", 100000, 3},
                                                 {1, "random", 800, 4}});
  Store store = Store::open(db, Store::Mode::kReadOnly);
  ReportOptions options;
  options.database = "sample.db";
  options.command_line = "ktune report reduce --db sample.db -o sample.html";
  const auto t0 = std::chrono::steady_clock::now();
  const Report report = build_report(store, {}, options);
  const std::string html = render_html(report);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::ofstream(dir / "sample.html") << html;
  std::ofstream(dir / "sample.md") << render_markdown(report);
  std::cout << "wrote " << (dir / "sample.html").string() << ": " << trials << " trials, "
            << html.size() / 1000 << " kB, rendered in " << s << " s\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--sample=", 9) == 0) return write_sample(argv[i] + 9);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  // The databases the benchmarks made.
  for (const auto& e : fs::directory_iterator(fs::temp_directory_path())) {
    const std::string name = e.path().filename().string();
    if (name.rfind("ktune-bench-report-" + std::to_string(::getpid()) + "-", 0) == 0)
      fs::remove(e.path());
  }
  return 0;
}
