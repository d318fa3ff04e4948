// `ktune export --kt-cache` and the way back: trials of a (fake) tuning run written as a Kernel
// Tuner cache read back unchanged, by the library and through the binary; replaying the export
// with `ktune tune --replay`, `ktune best` finding the replayed run, and the no-GPU fallback to a
// shipped recording ($KTUNE_RECORDINGS).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "ktune/device.h"
#include "ktune/registry.h"
#include "ktune/replay.h"
#include "ktune/tuner.h"
#include "tuner/cli_test_util.h"

namespace ktune {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::CliResult;
using test::contains;

#define SKIP_IF_GPU()                                                                      \
  do {                                                                                     \
    if (!list_devices().devices.empty()) GTEST_SKIP() << "this machine has a CUDA device"; \
  } while (0)

// Deterministic times per configuration; chosen configurations fail with chosen statuses.
class FakeBackend final : public Backend {
 public:
  explicit FakeBackend(const KernelInstance& instance) : instance_(instance) {}
  std::string name() const override { return "fake"; }
  DeviceInfo device() const override {
    DeviceInfo d;
    d.name = "Fake GPU";
    d.arch = "sm_90";
    d.cc_major = 9;
    d.sm_count = 132;
    d.memory_bytes = 80ll << 30;
    return d;
  }
  bool needs_compilation() const override { return false; }
  void prepare(const KernelInstance&, const MeasureOptions&) override {}
  Measurement evaluate(const Config& config, const CompileResult*) override {
    Measurement m;
    const std::string key = instance_.space().key(config);
    if (auto it = failures.find(key); it != failures.end()) {
      m.status = it->second.first;
      m.error = it->second.second;
      return m;
    }
    double t = 1.0;
    for (std::size_t i = 0; i < config.size(); ++i)
      t += static_cast<double>((config[i] * 7 + i * 3) % 5) * 0.1;
    m.time_ms = t;
    m.samples_ms = {t * 1.02, t, t * 0.99};
    m.time_min_ms = t * 0.99;
    m.time_mean_ms = (t * 1.02 + t + t * 0.99) / 3;
    m.time_spread = 0.01;
    return m;
  }
  std::vector<Measurement> retime(const std::vector<RetimeCandidate>& candidates, int) override {
    std::vector<Measurement> out;
    for (const auto& c : candidates) out.push_back(evaluate(c.config, nullptr));
    return out;
  }
  std::map<std::string, std::pair<TrialStatus, std::string>> failures;

 private:
  const KernelInstance& instance_;
};

// A job narrowing reduce to a few configurations at n = 2^20, a database with one brute-force run
// of it on the fake backend (four failures of different kinds), and the binary.
class Export : public ::testing::Test {
 protected:
  void SetUp() override {
    register_builtin_kernels(registry_);
    const KernelSpec& reduce = registry_.get("reduce");
    std::string job = "kernel = \"reduce\"\n[problem]\nn = 1048576\n[space]\n";
    for (const auto& p : reduce.params) {
      if (p.name == "variant") job += "variant = [7]\n";
      if (p.name == "elements_per_thread") job += "elements_per_thread = [2, 4, 8]\n";
      if (p.name == "unroll" || p.name == "maxrregcount" || p.name == "launch_bounds" ||
          p.name == "blocks_per_sm")
        job += fmt::format("{} = [{}]\n", p.name, p.values[0].to_literal());
    }
    job_path_ = dir_ / "job.toml";
    test::write_file(job_path_, job);
    const JobFile j = load_job(job_path_.string());
    instance_ = std::make_unique<KernelInstance>(
        apply_job(reduce, j), reduce.make_problem(j.problem), DeviceLimits::for_arch(90));
    const std::vector<Config> configs = instance_->space().enumerate();
    ASSERT_GE(configs.size(), 10u);
    FakeBackend backend(*instance_);
    backend.failures[instance_->space().key(configs[1])] = {TrialStatus::kCompileFailed,
                                                            "error: expected ';'"};
    backend.failures[instance_->space().key(configs[3])] = {TrialStatus::kWrongResult,
                                                            "out[3] = 7, expected 8"};
    backend.failures[instance_->space().key(configs[5])] = {TrialStatus::kLaunchFailed, ""};
    backend.failures[instance_->space().key(configs[7])] = {TrialStatus::kTimeout,
                                                            "killed after 20 s"};
    Store store = Store::open(db_path());
    auto strategy = make_strategy("brute_force");
    TuneOptions options;
    summary_ = tune(*instance_, backend, store, *strategy, options, nullptr);
    ASSERT_TRUE(summary_.best.has_value());
  }
  std::string db_path() const { return (dir_ / "ktune.db").string(); }
  CliResult run(const std::vector<std::string>& args,
                const std::map<std::string, std::optional<std::string>>& env = {}) {
    return test::run_ktune(args, dir_.path(), dir_ / "cache", env);
  }

  test::TempDir dir_;
  Registry registry_;
  fs::path job_path_;
  std::unique_ptr<KernelInstance> instance_;
  TuneSummary summary_;
};

void expect_same_trials(const Recording& a, const Recording& b) {
  ASSERT_EQ(a.trials.size(), b.trials.size());
  for (const auto& t : a.trials) {
    const RecordedTrial* u = b.find(t.values);
    ASSERT_NE(u, nullptr) << recording_key(t.values);
    SCOPED_TRACE(recording_key(t.values));
    EXPECT_EQ(u->status, t.status);
    EXPECT_EQ(u->error, t.error);
    EXPECT_EQ(u->samples_ms, t.samples_ms);
    if (t.status == TrialStatus::kOk) {
      EXPECT_DOUBLE_EQ(u->time_ms, t.time_ms);
    }
  }
}

TEST_F(Export, AKernelTunerCacheReadsBackAsWritten) {
  const Recording db = read_db_recording(db_path(), {"reduce", {}, ""});
  EXPECT_EQ(db.trials.size(), instance_->space().enumerate().size());
  EXPECT_EQ(db.count(TrialStatus::kWrongResult), 1u);
  EXPECT_EQ(db.problem_key(), "n=1048576");
  for (const std::string name : {"out.json.gz", "out.json"}) {
    SCOPED_TRACE(name);
    const std::string path = (dir_ / name).string();
    write_kt_cache(db, path);
    const std::string bytes = test::read_file(path);
    EXPECT_EQ(bytes.size() > 2 && bytes[0] == '\x1f' && bytes[1] == '\x8b', name.ends_with(".gz"));
    const Recording back = read_kt_cache(path);
    EXPECT_EQ(back.kernel_name, "reduce");
    EXPECT_EQ(back.device_name, "Fake GPU");
    EXPECT_EQ(back.arch, "sm_90");
    EXPECT_EQ(back.problem_key(), "n=1048576");
    EXPECT_EQ(back.source_hash, db.source_hash);
    ASSERT_EQ(back.params.size(), db.params.size());
    for (std::size_t i = 0; i < db.params.size(); ++i)
      EXPECT_EQ(back.params[i].name, db.params[i].name);
    expect_same_trials(db, back);
    EXPECT_EQ(recording_key(back.optimum()->values), recording_key(db.optimum()->values));
  }
  // What Kernel Tuner itself needs: its keys, its failure names, a mean in `time`.
  const json kt = json::parse(read_maybe_gzip((dir_ / "out.json.gz").string()));
  EXPECT_EQ(kt.at("kernel_name"), "reduce");
  EXPECT_EQ(kt.at("problem_size"), json::array({1048576}));
  EXPECT_EQ(kt.at("objective"), "time");
  ASSERT_EQ(kt.at("tune_params_keys").size(), instance_->space().size());
  EXPECT_EQ(kt.at("tune_params_keys").at(0), instance_->space().params()[0].name);
  std::map<std::string, int> names;
  for (const auto& [key, e] : kt.at("cache").items()) {
    EXPECT_EQ(std::count(key.begin(), key.end(), ','),
              static_cast<long>(instance_->space().size() - 1))
        << key;
    if (e.at("time").is_string()) {
      ++names[e.at("time").get<std::string>()];
    } else {
      EXPECT_NEAR(e.at("time").get<double>(),
                  e.at("times").at(0).get<double>() * (1.02 + 1 + 0.99) / 3 / 1.02, 1e-12);
    }
  }
  EXPECT_EQ(names["CompilationFailedConfig"], 1);
  EXPECT_EQ(names["RuntimeFailedConfig"], 3);  // launch failed, wrong result, timeout
}

TEST_F(Export, ThroughTheBinary) {
  CliResult r = run({"export", "reduce", "--kt-cache", "out.json.gz", "--db", db_path()});
  ASSERT_EQ(r.code, 0) << r;
  const std::size_t configs = instance_->space().enumerate().size();
  EXPECT_TRUE(contains(
      r.out, fmt::format("wrote {} configurations of reduce [n=1048576] on Fake GPU ({} ok)",
                         configs, configs - 4)))
      << r;
  expect_same_trials(read_db_recording(db_path(), {"reduce", {}, ""}),
                     read_kt_cache((dir_ / "out.json.gz").string()));

  fs::create_directories(dir_ / "recs");
  r = run({"export", "--kernel", "reduce", "-p", "n=2**20", "--kt-cache", "recs", "--db", db_path(),
           "--json"});
  ASSERT_EQ(r.code, 0) << r;
  const fs::path canonical = dir_ / "recs" / "reduce-Fake_GPU-n=1048576.json.gz";
  EXPECT_TRUE(fs::exists(canonical)) << r;
  EXPECT_EQ(json::parse(r.out).at("written").at(0).at("path"),
            (fs::path("recs") / canonical.filename()).string());

  r = run({"export", "reduce", "--db", db_path()});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "--kt-cache FILE")) << r;
  r = run({"export", "reduce", "-p", "n=4096", "--kt-cache", "x.json", "--db", db_path()});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "no runs of kernel 'reduce'")) << r;
  r = run({"export", "reduce", "-p", "m=1", "--kt-cache", "x.json", "--db", db_path()});
  EXPECT_EQ(r.code, 2) << r;
  r = run({"export", "reduce", "--kt-cache", "x.json", "--db", "missing.db"});
  EXPECT_EQ(r.code, 5) << r;
  r = run({"export", "reduce", "--kt-cache", "no/such/dir/x.json", "--db", db_path()});
  EXPECT_EQ(r.code, 3) << r;
}

TEST_F(Export, TheExportReplaysAndBestFindsIt) {
  ASSERT_EQ(run({"export", "reduce", "--kt-cache", "out.json.gz", "--db", db_path()}).code, 0);
  CliResult r =
      run({"tune", "--config", job_path_.string(), "--replay", "out.json.gz", "--db", "replay.db"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_FALSE(contains(r.err, "not in the recording")) << r;
  EXPECT_TRUE(contains(r.out, fmt::format("{} ok", instance_->space().enumerate().size() - 4)))
      << r;
  EXPECT_TRUE(contains(r.out, summary_.best->config_key)) << r;
  Store store = Store::open(dir_ / "replay.db", Store::Mode::kReadOnly);
  ASSERT_EQ(store.runs().size(), 1u);
  EXPECT_EQ(store.runs()[0].backend, "replay");
  EXPECT_TRUE(store.runs()[0].replayed);
  ASSERT_EQ(store.devices().size(), 1u);
  EXPECT_EQ(store.devices()[0].name, "Fake GPU");
  EXPECT_EQ(store.devices()[0].arch, "sm_90");  // the recorded device's own architecture

  r = run({"best", "reduce", "-p", "n=1048576", "--db", "replay.db"});
  EXPECT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "Fake GPU (sm_90)")) << r;
  // Found by its architecture too.
  r = run({"best", "reduce", "-p", "n=1048576", "--arch", "sm_90", "--db", "replay.db"});
  EXPECT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, summary_.best->config_key)) << r;
  EXPECT_TRUE(contains(r.out, summary_.best->config_key)) << r;

  // Without --problem the recorded one is replayed; a different one is refused.
  r = run({"tune", "reduce", "--backend", "replay", "--replay", "out.json.gz", "--db", "replay.db",
           "--budget-evals", "3"});
  EXPECT_TRUE(r.code == 0 || r.code == 1) << r;  // 1: none of the first three was recorded
  EXPECT_TRUE(contains(r.err, "are not in the recording"))
      << r;  // the whole reduce space is larger
  r = run({"tune", "reduce", "--replay", "out.json.gz", "-p", "n=4096", "--db", "replay.db"});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "for [n=1048576], not [n=4096]")) << r;
  // The database itself replays too.
  r = run({"tune", "--config", job_path_.string(), "--replay", db_path(), "--db", "again.db",
           "--json"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_EQ(json::parse(r.out).at("best").at("key"), summary_.best->config_key);
  EXPECT_EQ(json::parse(r.out).at("backend"), "replay");
}

TEST_F(Export, WithoutAGpuTuneReplaysAShippedRecording) {
  SKIP_IF_GPU();
  fs::create_directories(dir_ / "recs");
  fs::create_directories(dir_ / "none");
  ASSERT_EQ(run({"export", "reduce", "--kt-cache", "recs", "--db", db_path()}).code, 0);
  const std::map<std::string, std::optional<std::string>> env = {
      {"KTUNE_RECORDINGS", (dir_ / "recs").string()}};

  CliResult r = run({"tune", "--config", job_path_.string(), "--db", "fallback.db"}, env);
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.err, "note: no CUDA device")) << r;
  EXPECT_TRUE(contains(r.err, "replaying recorded measurements from " + (dir_ / "recs").string() +
                                  "/reduce-Fake_GPU-n=1048576.json.gz, measured on Fake GPU"))
      << r;
  EXPECT_TRUE(contains(r.out, summary_.best->config_key)) << r;
  EXPECT_TRUE(fs::exists(dir_ / "fallback.db"));

  // --backend cuda insists on a GPU and touches no database.
  r = run({"tune", "--config", job_path_.string(), "--backend", "cuda", "--db", "cuda.db"}, env);
  EXPECT_EQ(r.code, 7) << r;
  EXPECT_TRUE(contains(r.err, "no CUDA device")) << r;
  EXPECT_FALSE(fs::exists(dir_ / "cuda.db"));
  // No recording of this problem: the plain device error, saying where it looked.
  r = run({"tune", "--config", job_path_.string(), "-p", "n=4096", "--db", "other.db"}, env);
  EXPECT_EQ(r.code, 7) << r;
  EXPECT_TRUE(contains(r.err, "no recording of reduce [n=4096] ships with ktune")) << r;
  EXPECT_FALSE(fs::exists(dir_ / "other.db"));
  r = run({"tune", "--config", job_path_.string(), "--db", "none.db"},
          {{"KTUNE_RECORDINGS", (dir_ / "none").string()}});
  EXPECT_EQ(r.code, 7) << r;
  EXPECT_TRUE(contains(r.err, (dir_ / "none").string())) << r;
}

TEST_F(Export, ReplayInputErrors) {
  test::write_file(dir_ / "text.json", "not json at all");
  test::write_file(dir_ / "nocache.json",
                   R"({"kernel_name": "reduce", "tune_params_keys": ["block_size"],
      "tune_params": {"block_size": [32]}})");
  test::write_file(dir_ / "fake.json.gz", "\x1f\x8b not really gzip");
  struct Case {
    std::vector<std::string> args;
    int code;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {{"tune", "reduce", "--replay", "missing.json.gz"}, 3, "missing.json.gz: no such file"},
      {{"tune", "reduce", "--replay", "text.json"},
       3,
       "text.json: not a Kernel Tuner cache: not JSON"},
      {{"tune", "reduce", "--replay", "fake.json.gz"}, 3, "fake.json.gz: not a valid gzip file"},
      {{"tune", "reduce", "--replay", "nocache.json"},
       3,
       "nocache.json: not a Kernel Tuner cache: no 'cache'"},
      {{"tune", "reduce", "--backend", "replay"}, 2, "--backend replay needs the recording"},
      {{"tune", "reduce", "--backend", "gpu"}, 2, "--backend 'gpu': expected cuda or replay"},
      {{"tune", "reduce", "--backend", "cuda", "--replay", "x.json"}, 2, "--replay FILE replays"},
  };
  for (const auto& c : cases) {
    const CliResult r = run(c.args);
    EXPECT_EQ(r.code, c.code) << r;
    EXPECT_TRUE(contains(r.err, "error: " + c.needle)) << r;
  }
}

}  // namespace
}  // namespace ktune
