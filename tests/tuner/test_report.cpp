// Reports and the T4 export: the analysis (convergence, importance, failures, re-timing,
// cross-device), the Markdown summary against a golden file, the HTML page's self-containment,
// the T4 documents against the vendored schemas, and the `ktune report` command. The database
// is written directly through the Store with fixed dates, so the output is the same every run.
#include <SQLiteCpp/Database.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "ktune/backend.h"
#include "ktune/registry.h"
#include "ktune/report.h"
#include "ktune/strategy.h"
#include "ktune/t4.h"
#include "ktune/tuner.h"
#include "tuner/cli_test_util.h"

namespace ktune {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// --- A small, fully determined database: reduce over block_size x unroll on two devices. ---

struct FixtureConfig {
  int block_size;
  int unroll;
};

const std::vector<FixtureConfig> kGrid = {{64, 1},  {64, 2},  {64, 4},  {128, 1}, {128, 2},
                                          {128, 4}, {256, 1}, {256, 2}, {256, 4}};

double factor_block(int bs, bool h200) {
  if (bs == 64) return h200 ? 1.5 : 1.6;
  if (bs == 128) return h200 ? 0.95 : 1.1;
  return 1.0;
}
double factor_unroll(int u) { return u == 1 ? 1.3 : u == 2 ? 1.0 : 1.05; }

std::string key_of(const FixtureConfig& c) {
  return "block_size=" + std::to_string(c.block_size) + ",unroll=" + std::to_string(c.unroll);
}

class ReportDb {
 public:
  explicit ReportDb(const fs::path& path) : path_(path), store_(Store::open(path)) {
    KernelRecord k;
    k.name = "reduce";
    k.source_hash = "3f2a9c1e5b7d4a60aa";
    k.space_hash = "9e8d7c6b5a4f3e21bb";
    k.source = "template <int BLOCK_SIZE, int UNROLL> __global__ void reduce(...) {}";
    k.entry = "reduce<BLOCK_SIZE, UNROLL>";
    k.spec_json =
        R"({"parameters":[{"name":"block_size","values":["64","128","256"],"default":"128"},)"
        R"({"name":"unroll","values":["1","2","4"],"default":"1"}],"problem":[{"name":"n","default":"16777216"}]})";
    kernel_id_ = store_.upsert_kernel(k);
    ProblemRecord p;
    p.kernel_name = "reduce";
    p.key = "n=16777216";
    p.json = R"({"n": 16777216})";
    problem_id_ = store_.upsert_problem(p);
    DeviceRecord h100;
    h100.name = "NVIDIA H100 80GB HBM3";
    h100.arch = "sm_90";
    h100.cc_major = 9;
    h100.sm_count = 132;
    h100.memory_bytes = 85899345920;
    h100.l2_bytes = 52428800;
    h100.driver_version = 13000;
    h100.nvrtc_version = "13.0";
    h100_ = store_.upsert_device(h100);
    DeviceRecord h200 = h100;
    h200.name = "NVIDIA H200";
    h200.memory_bytes = 151397597184;
    h200.l2_bytes = 62914560;
    h200_ = store_.upsert_device(h200);
  }

  // One run: evaluates `order` (indices into kGrid) at 1.5 s intervals, re-times the top
  // `retime` and stores the winner. `failures` maps a grid index to its failure.
  std::int64_t run(std::int64_t device, const std::string& strategy, const std::vector<int>& order,
                   const std::map<int, TrialStatus>& failures, int retime, const std::string& start,
                   const std::string& summary = "{}") {
    RunRecord r;
    r.kernel_id = kernel_id_;
    r.device_id = device;
    r.problem_id = problem_id_;
    r.backend = "cuda";
    r.strategy = strategy;
    r.strategy_options = "{}";
    r.budget = R"({"evaluations": 9})";
    r.ktune_version = "0.0.0-test";
    r.nvrtc_version = "13.0";
    r.driver_version = 13000;
    r.host = "gpu-node-1";
    r.command_line = "ktune tune reduce -p n=2**24 --strategy " + strategy;
    r.seed = 7;
    const std::int64_t id = store_.begin_run(r);
    const double t0 = *parse_utc(start);
    double t = t0;
    std::vector<TrialRecord> ok;
    for (const int i : order) {
      const FixtureConfig& c = kGrid[static_cast<std::size_t>(i)];
      TrialRecord tr = base(id, device, c);
      t += 1.5;
      tr.created_at = iso(t);
      tr.compile_ms = 120;
      tr.eval_ms = 40;
      if (auto f = failures.find(i); f != failures.end()) {
        tr.status = f->second;
        if (f->second == TrialStatus::kCompileFailed) {
          tr.error = "reduce.cu 'reduce<" + std::to_string(c.block_size) +
                     ", 4>' sm_90: NVRTC_ERROR_COMPILATION: reduce.cu(12): error: identifier "
                     "\"UNROL\" is undefined";
          tr.compile_log =
              "reduce.cu(12): error: identifier \"UNROL\" is undefined\n\n"
              "1 error detected in the compilation of \"reduce.cu\".\n";
          tr.registers = -1;
        } else if (f->second == TrialStatus::kResourcesExceeded) {
          tr.error = "launch: too many resources requested for launch";
        } else if (f->second == TrialStatus::kTimeout) {
          tr.error = "no result within 20.0 s; the worker was killed and will be restarted";
        } else {
          tr.error = "output differs from the reference: out[0] = 12, expected 16";
        }
      } else {
        const double ms =
            0.2 * factor_block(c.block_size, device == h200_) * factor_unroll(c.unroll);
        measured(tr, ms);
      }
      tr.id = store_.add_trial(tr);
      if (tr.status == TrialStatus::kOk) ok.push_back(tr);
    }
    std::sort(ok.begin(), ok.end(),
              [](const TrialRecord& a, const TrialRecord& b) { return a.time_ms < b.time_ms; });
    ok.resize(std::min<std::size_t>(ok.size(), static_cast<std::size_t>(retime)));
    TrialRecord winner;
    for (std::size_t i = 0; i < ok.size(); ++i) {
      TrialRecord r2 = ok[i];
      // The re-timing swaps the first two, as noise in the search would have it.
      const double ms = ok[i].time_ms * (i == 0 ? 1.02 : i == 1 ? 0.99 : 1.0);
      measured(r2, ms);
      r2.id = 0;
      r2.sample_count = 10;
      r2.samples_ms.assign(10, ms);
      r2.kind = TrialKind::kRetime;
      t += 0.5;
      r2.created_at = iso(t);
      r2.id = store_.add_trial(r2);
      if (winner.id == 0 || r2.time_ms < winner.time_ms) winner = r2;
    }
    if (winner.id) store_.set_best(winner.id);
    store_.finish_run(id, RunStatus::kFinished, summary);
    dates_.emplace_back(id, start, iso(t + 1));
    return id;
  }

  // Fixes the run dates and hosts (the store sets them from the clock and the process) and
  // closes the store.
  void seal() {
    SQLite::Database db(path_.string(), SQLite::OPEN_READWRITE);
    for (const auto& [id, start, end] : dates_)
      db.exec("UPDATE runs SET started_at = '" + start + "', finished_at = '" + end +
              "', host = 'gpu-node-1' WHERE id = " + std::to_string(id));
  }

  std::int64_t h100() const { return h100_; }
  std::int64_t h200() const { return h200_; }

  static std::string iso(double epoch) {
    const auto whole = static_cast<std::time_t>(std::floor(epoch));
    const int ms = static_cast<int>(std::lround((epoch - std::floor(epoch)) * 1000)) % 1000;
    std::tm tm{};
    gmtime_r(&whole, &tm);
    char buf[40];
    std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
    char out[48];
    std::snprintf(out, sizeof(out), "%s.%03dZ", buf, ms);
    return out;
  }

 private:
  TrialRecord base(std::int64_t run, std::int64_t device, const FixtureConfig& c) const {
    TrialRecord t;
    t.run_id = run;
    t.kernel_id = kernel_id_;
    t.device_id = device;
    t.problem_id = problem_id_;
    t.config_key = key_of(c);
    t.config_json = R"({"block_size": )" + std::to_string(c.block_size) + R"(, "unroll": )" +
                    std::to_string(c.unroll) + "}";
    t.time_ms = t.time_min_ms = t.time_mean_ms = t.time_spread = t.gbps = t.gflops = std::nan("");
    t.arch = "sm_90";
    t.compile_options = "-std=c++17 --gpu-architecture=sm_90";
    t.registers = 16 + 4 * c.unroll;
    t.spill_bytes = 0;
    t.local_bytes = 0;
    t.static_shared_bytes = 0;
    t.dynamic_shared_bytes = c.block_size * 4;
    t.max_threads_per_block = 1024;
    t.occupancy = c.block_size == 64 ? 0.5 : 1.0;
    return t;
  }
  static void measured(TrialRecord& t, double ms) {
    t.status = TrialStatus::kOk;
    t.samples_ms = {ms * 0.99, ms, ms * 1.01};
    t.sample_count = 3;
    t.time_ms = ms;
    t.time_min_ms = ms * 0.99;
    t.time_mean_ms = ms;
    t.time_spread = 0.01;
    t.gbps = 4.0 * 16777216 / (ms * 1e-3) / 1e9;
  }

  fs::path path_;
  Store store_;
  std::int64_t kernel_id_ = 0, problem_id_ = 0, h100_ = 0, h200_ = 0;
  std::vector<std::tuple<std::int64_t, std::string, std::string>> dates_;
};

class Report_ : public ::testing::Test {
 protected:
  void SetUp() override {
    db_path_ = dir_ / "results.db";
    ReportDb db(db_path_);
    // Run 1, H100, random: 6 of 9, one compile failure.
    run1_ = db.run(db.h100(), "random", {4, 2, 6, 0, 7, 3}, {{2, TrialStatus::kCompileFailed}}, 3,
                   "2026-03-14T22:00:00.000Z");
    // Run 2, H100, brute force: all 9, a compile failure and a resource failure.
    run2_ = db.run(db.h100(), "brute_force", {0, 1, 2, 3, 4, 5, 6, 7, 8},
                   {{2, TrialStatus::kCompileFailed}, {8, TrialStatus::kResourcesExceeded}}, 3,
                   "2026-03-14T23:00:00.000Z");
    // Run 3, H200, brute force: all 9, a compile failure and a timeout.
    run3_ = db.run(db.h200(), "brute_force", {0, 1, 2, 3, 4, 5, 6, 7, 8},
                   {{2, TrialStatus::kCompileFailed}, {3, TrialStatus::kTimeout}}, 3,
                   "2026-03-15T01:00:00.000Z");
    db.seal();
  }

  ReportOptions options() const {
    ReportOptions o;
    o.database = "results.db";
    o.generated_at = "2026-03-15T08:00:00.000Z";
    o.command_line = "ktune report reduce --format md";
    return o;
  }

  test::TempDir dir_;
  fs::path db_path_;
  std::int64_t run1_ = 0, run2_ = 0, run3_ = 0;
};

TEST_F(Report_, SeparatesTheFinalRetimingFromTheSearch) {
  Store store = Store::open(db_path_, Store::Mode::kReadOnly);
  const Report r = build_report(store, {}, options());
  ASSERT_EQ(r.studies.size(), 1u);
  const ReportStudy& s = r.studies[0];
  ASSERT_EQ(s.runs.size(), 3u);
  EXPECT_EQ(s.runs[0].search.size(), 6u);
  EXPECT_EQ(s.runs[0].retimed.size(), 3u);
  EXPECT_EQ(s.runs[1].search.size(), 9u);
  for (const auto& run : s.runs)
    for (const auto& t : run.search) EXPECT_FALSE(is_retimed(t)) << t.error;
  EXPECT_EQ(r.trials, 6u + 3 + 9 + 3 + 9 + 3);
  // Finalists come fastest first, and the stored best is the re-timing's winner.
  const DeviceAnalysis& h100 = s.devices[0];
  EXPECT_EQ(h100.device.name, "NVIDIA H100 80GB HBM3");
  ASSERT_EQ(h100.finalists.size(), 3u);
  EXPECT_LE(h100.finalists[0].time_ms, h100.finalists[1].time_ms);
  ASSERT_TRUE(h100.best.has_value());
  EXPECT_TRUE(h100.best_is_stored);
  EXPECT_EQ(h100.best->config_key, h100.finalists[0].config_key);
  // Run 2 re-timed (256,2) 0.204, (128,2) 0.2178, (128,4) 0.231; the latest best wins.
  EXPECT_EQ(h100.best->config_key, "block_size=256,unroll=2");
  EXPECT_NEAR(h100.best->time_ms, 0.204, 1e-12);
}

TEST_F(Report_, ConvergenceFollowsTheBestSoFar) {
  Store store = Store::open(db_path_, Store::Mode::kReadOnly);
  const Report r = build_report(store, {}, options());
  const ReportRun& run1 = r.studies[0].runs[0];
  // Order 4 (128,2) 2 (failed) 6 (256,1) 0 (64,1) 7 (256,2) 3 (128,1): 0.22, -, 0.26, 0.416, 0.2,
  // 0.286.
  ASSERT_EQ(run1.improvements.size(), 2u);
  EXPECT_EQ(run1.improvements[0].first, 0u);
  EXPECT_NEAR(run1.improvements[0].second, 0.22, 1e-12);
  EXPECT_EQ(run1.improvements[1].first, 4u);
  EXPECT_NEAR(run1.improvements[1].second, 0.2, 1e-12);
  EXPECT_EQ(run1.evals_to_10pct, 1u);  // 0.22 is within 10% of 0.2
  EXPECT_EQ(run1.evals_to_1pct, 5u);
  ASSERT_EQ(run1.elapsed_s.size(), 6u);
  EXPECT_NEAR(run1.elapsed_s[0], 1.5, 1e-6);
  EXPECT_NEAR(run1.elapsed_s[5], 9.0, 1e-6);
  EXPECT_NEAR(run1.duration_s, 9.0 + 1.5 + 1, 1e-6);
  EXPECT_EQ(run1.by_status.at(TrialStatus::kCompileFailed), 1u);
}

TEST_F(Report_, ImportanceIsTheShareOfLogTimeVarianceOfEachParameter) {
  // H200 alone, with its failures: check against eta^2 computed here from the ok configurations.
  Store store = Store::open(db_path_, Store::Mode::kReadOnly);
  ReportSelection sel;
  sel.device = "H200";
  const Report r = build_report(store, sel, options());
  const DeviceAnalysis& a = r.studies[0].devices.at(0);
  std::vector<std::pair<FixtureConfig, double>> ok;
  for (std::size_t i = 0; i < kGrid.size(); ++i)
    if (i != 2 && i != 3)
      ok.emplace_back(kGrid[i], std::log(0.2 * factor_block(kGrid[i].block_size, true) *
                                         factor_unroll(kGrid[i].unroll)));
  double mean = 0;
  for (auto& [c, y] : ok) mean += y;
  mean /= static_cast<double>(ok.size());
  double total = 0;
  for (auto& [c, y] : ok) total += (y - mean) * (y - mean);
  const auto eta2 = [&](auto value_of) {
    std::map<int, std::pair<double, int>> by;
    for (auto& [c, y] : ok) by[value_of(c)].first += y, by[value_of(c)].second++;
    double between = 0;
    for (auto& [v, sn] : by) between += sn.second * std::pow(sn.first / sn.second - mean, 2);
    return between / total;
  };
  std::map<std::string, double> got;
  for (const auto& e : a.effects) got[e.name] = e.importance;
  EXPECT_NEAR(got.at("block_size"), eta2([](const FixtureConfig& c) { return c.block_size; }),
              1e-12);
  EXPECT_NEAR(got.at("unroll"), eta2([](const FixtureConfig& c) { return c.unroll; }), 1e-12);
  // Most important first; the value with the lowest median is named.
  EXPECT_EQ(a.effects[0].name, "block_size");
  EXPECT_EQ(a.effects[0].best_value, "128");
  // Values keep the kernel's declared order and count failures.
  ASSERT_EQ(a.effects[1].name, "unroll");
  ASSERT_EQ(a.effects[1].values.size(), 3u);
  EXPECT_EQ(a.effects[1].values[0].value, "1");
  EXPECT_EQ(a.effects[1].values[2].value, "4");
  EXPECT_EQ(a.effects[1].values[2].failed, 1u);  // (64,4) failed to compile
  EXPECT_EQ(a.effects[1].values[0].failed, 1u);  // (128,1) timed out
}

TEST(ReportAnalysis, ImportanceOfAnAdditiveFullGridSumsToOne) {
  test::TempDir dir;
  ReportDb db(dir / "grid.db");
  db.run(db.h100(), "brute_force", {0, 1, 2, 3, 4, 5, 6, 7, 8}, {}, 0, "2026-01-01T00:00:00.000Z");
  db.seal();
  Store store = Store::open(dir / "grid.db", Store::Mode::kReadOnly);
  const Report r = build_report(store, {});
  const DeviceAnalysis& a = r.studies[0].devices[0];
  // log(time) = log a(bs) + log b(u) on a balanced grid: the two shares are each factor's sum of
  // squares over their total, and together explain everything.
  const auto ss = [](std::vector<double> v) {
    double m = 0;
    for (double& x : v) x = std::log(x), m += x;
    m /= static_cast<double>(v.size());
    double s = 0;
    for (double x : v) s += (x - m) * (x - m);
    return s;
  };
  const double sa = ss({1.6, 1.1, 1.0}), sb = ss({1.3, 1.0, 1.05});
  std::map<std::string, double> got;
  for (const auto& e : a.effects) got[e.name] = e.importance;
  EXPECT_NEAR(got.at("block_size"), sa / (sa + sb), 1e-12);
  EXPECT_NEAR(got.at("unroll"), sb / (sa + sb), 1e-12);
  EXPECT_NEAR(a.explained, 1.0, 1e-12);
  EXPECT_TRUE(a.finalists.empty());
  EXPECT_FALSE(a.best_is_stored);  // no re-timing, no stored best: the fastest trial stands in
  ASSERT_TRUE(a.best.has_value());
  EXPECT_EQ(a.best->config_key, "block_size=256,unroll=2");
}

TEST_F(Report_, GroupsFailuresByReasonWithTheirLogs) {
  Store store = Store::open(db_path_, Store::Mode::kReadOnly);
  ReportSelection sel;
  sel.device = "sm_90";
  sel.runs = {run2_};
  const Report r = build_report(store, sel, options());
  const DeviceAnalysis& a = r.studies[0].devices[0];
  ASSERT_EQ(a.failures.size(), 2u);
  std::set<std::string> reasons;
  for (const auto& g : a.failures) {
    reasons.insert(g.reason);
    ASSERT_EQ(g.examples.size(), 1u);
    if (g.status == TrialStatus::kCompileFailed) {
      EXPECT_TRUE(test::contains(g.examples[0].compile_log, "1 error detected"));
    }
  }
  EXPECT_TRUE(reasons.count("reduce.cu(12): error: identifier \"UNROL\" is undefined"));
  EXPECT_TRUE(reasons.count("launch: too many resources requested for launch"));
  EXPECT_EQ(a.by_status.at(TrialStatus::kOk), 7u);
}

TEST_F(Report_, ComparesTheBestOfEachDeviceOnTheOthers) {
  Store store = Store::open(db_path_, Store::Mode::kReadOnly);
  ReportSelection sel;
  sel.runs = {run3_};  // the comparison covers every device, whatever the selection
  const Report r = build_report(store, sel, options());
  ASSERT_TRUE(r.studies[0].cross.has_value());
  const CrossDevice& x = *r.studies[0].cross;
  ASSERT_EQ(x.devices.size(), 2u);
  EXPECT_EQ(x.devices[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(x.best[0].config_key, "block_size=256,unroll=2");
  EXPECT_EQ(x.best[1].config_key, "block_size=128,unroll=2");  // 0.2 * 0.95 * 1.02 re-timed
  for (std::size_t i = 0; i < 2; ++i) EXPECT_DOUBLE_EQ(*x.time_ms[i][i], x.best[i].time_ms);
  // H100's best (256,2) on H200: its latest ok trial there, the re-timing's 0.2.
  ASSERT_TRUE(x.time_ms[0][1].has_value());
  EXPECT_NEAR(*x.time_ms[0][1], 0.2, 1e-12);
  // H200's best (128,2) on H100: run 2's re-timing, 0.22 * 0.99.
  ASSERT_TRUE(x.time_ms[1][0].has_value());
  EXPECT_NEAR(*x.time_ms[1][0], 0.2178, 1e-12);
}

TEST_F(Report_, SelectsRunsAndSaysWhatTheDatabaseHolds) {
  Store store = Store::open(db_path_, Store::Mode::kReadOnly);
  ReportSelection by_device;
  by_device.device = "h100";
  EXPECT_EQ(select_runs(store, by_device), (std::vector<std::int64_t>{run1_, run2_}));
  ReportSelection by_problem;
  by_problem.problem = {{"n", 16777216}};
  EXPECT_EQ(select_runs(store, by_problem).size(), 3u);
  by_problem.problem = {{"n", 1024}};
  test::expect_error(ErrorKind::kUsage, {"no run matches", "reduce (3 runs)"},
                     [&] { select_runs(store, by_problem); });
  ReportSelection unknown;
  unknown.runs = {99};
  test::expect_error(ErrorKind::kUsage, {"--run 99", "has no run 99"},
                     [&] { select_runs(store, unknown); });
  ReportSelection other_kernel;
  other_kernel.kernel = "saxpy";
  test::expect_error(ErrorKind::kUsage, {"no run matches (kernel saxpy)"},
                     [&] { select_runs(store, other_kernel); });
}

TEST_F(Report_, MarkdownGolden) {
  Store store = Store::open(db_path_, Store::Mode::kReadOnly);
  std::string md = render_markdown(build_report(store, {}, options()));
  // The ktune version is the only thing that changes between builds.
  for (std::size_t at; (at = md.find("ktune " KTUNE_VERSION)) != std::string::npos;)
    md.replace(at, std::string("ktune " KTUNE_VERSION).size(), "ktune <version>");
  test::expect_golden("report_reduce.md", md);
}

TEST_F(Report_, HtmlIsSelfContained) {
  Store store = Store::open(db_path_, Store::Mode::kReadOnly);
  const std::string html = render_html(build_report(store, {}, options()));
  // No fetches: no external scripts, styles, fonts or images; the only URL is the SVG namespace.
  for (const char* banned :
       {"<script src", "<link", "@import", "url(", "<img", "<iframe", "https://"})
    EXPECT_FALSE(test::contains(html, banned)) << banned;
  std::string rest = html;
  for (std::size_t at; (at = rest.find("http://www.w3.org/2000/svg")) != std::string::npos;)
    rest.erase(at, 26);
  EXPECT_FALSE(test::contains(rest, "http://"));
  // Plots: 2 convergence, per device importance + 2 parameters + status, for two devices.
  std::size_t plots = 0;
  for (std::size_t at = 0; (at = html.find("<svg class=\"plot\"", at)) != std::string::npos; ++at)
    ++plots;
  EXPECT_EQ(plots, 2u + 2 * 4);
  for (const char* section :
       {"Convergence", "Parameter effects on NVIDIA H200", "Top configurations", "Failures",
        "Across devices", "Provenance", "Final interleaved re-timing", "<details>",
        "1 error detected in the compilation", "ktune tune reduce -p n=2**24 --strategy random"})
    EXPECT_TRUE(test::contains(html, section)) << section;
  // Text from the database is escaped.
  EXPECT_TRUE(test::contains(html, "identifier &quot;UNROL&quot; is undefined"));
}

// The clocks a run's summary recorded under load (the search's, and the re-timing's after its
// sustained load) are said beside the runs in every format; runs without them say nothing.
TEST(ReportClocks, RunsSayTheClocksTheirTrialsRanAt) {
  test::TempDir dir;
  {
    ReportDb db(dir.path() / "clocks.db");
    db.run(db.h200(), "brute_force", {0, 1, 2, 3}, {}, 3, "2026-11-28T06:00:00.000Z",
           R"({"gpu_clocks": {"readings": 4, "sm_min_mhz": 1965, "sm_max_mhz": 1980,
               "sm_limit_mhz": 1980, "temperature_min_c": 35, "temperature_max_c": 53,
               "reasons": 0},
               "retime": {"finalists": 3, "sustain_seconds": 0.512,
                          "gpu_clocks": {"readings": 3, "sm_min_mhz": 1770, "sm_max_mhz": 1770,
                                         "sm_limit_mhz": 1980, "temperature_min_c": 55,
                                         "temperature_max_c": 55, "reasons": 4}}})");
    db.run(db.h100(), "random", {4, 5}, {}, 2, "2026-11-28T07:00:00.000Z");  // summary "{}"
    db.seal();
  }
  Store store = Store::open(dir.path() / "clocks.db", Store::Mode::kReadOnly);
  ReportOptions o;
  o.database = "clocks.db";
  const Report r = build_report(store, {}, o);
  ASSERT_EQ(r.studies.size(), 1u);
  ASSERT_EQ(r.studies[0].runs.size(), 2u);
  const std::string said =
      "search SM 1965-1980 MHz (max 1980), 35-53 C; re-timed after 0.51 s of sustained load at "
      "SM 1770-1770 MHz (max 1980), 55-55 C, slowdown reasons 0x4";
  EXPECT_EQ(r.studies[0].runs[0].clocks, said);
  EXPECT_EQ(r.studies[0].runs[1].clocks, "");
  EXPECT_TRUE(test::contains(render_markdown(r), "- #1: " + said + "\n"));
  EXPECT_TRUE(test::contains(render_html(r), "#1: " + said));
  const nlohmann::json j = nlohmann::json::parse(render_json(r));
  EXPECT_EQ(j.at("studies")[0].at("runs")[0].at("gpu_clocks"), said) << j.dump();
  EXPECT_FALSE(j.at("studies")[0].at("runs")[1].contains("gpu_clocks"));
}

TEST(ReportHtml, EscapesWhatTheDatabaseSays) {
  test::TempDir dir;
  {
    ReportDb db(dir / "x.db");
    db.run(db.h100(), "<script>alert(1)</script>", {0, 1}, {{1, TrialStatus::kCrashed}}, 0,
           "2026-01-01T00:00:00.000Z");
    db.seal();
  }
  Store store = Store::open(dir / "x.db", Store::Mode::kReadOnly);
  const std::string html = render_html(build_report(store, {}));
  EXPECT_FALSE(test::contains(html, "<script>alert"));
  EXPECT_TRUE(test::contains(html, "&lt;script&gt;alert(1)&lt;/script&gt;"));
}

TEST(ReportTime, ParsesTheStoresTimestamps) {
  EXPECT_DOUBLE_EQ(*parse_utc("1970-01-01T00:00:00.000Z"), 0.0);
  EXPECT_DOUBLE_EQ(*parse_utc("2026-03-14T22:00:01.250Z"), 1773525601.25);
  EXPECT_DOUBLE_EQ(*parse_utc("2000-02-29T12:00:00Z"), 951825600.0);
  EXPECT_FALSE(parse_utc("").has_value());
  EXPECT_FALSE(parse_utc("yesterday").has_value());
}

// --- The tuner's own output: a fake backend run reads back as search + re-timing. ---

class QuickBackend final : public Backend {
 public:
  explicit QuickBackend(const KernelInstance& instance) : instance_(instance) {}
  std::string name() const override { return "fake"; }
  DeviceInfo device() const override {
    DeviceInfo d;
    d.name = "Fake GPU";
    d.arch = "sm_90";
    d.cc_major = 9;
    d.sm_count = 132;
    return d;
  }
  bool needs_compilation() const override { return false; }
  void prepare(const KernelInstance&, const MeasureOptions&) override {}
  Measurement evaluate(const Config& c, const CompileResult*) override {
    Measurement m;
    if (c[0] == 0) {
      m.status = TrialStatus::kWrongResult;
      m.error = "output differs from the reference";
      return m;
    }
    m.time_ms = time_of(c);
    m.samples_ms = {m.time_ms, m.time_ms};
    m.time_min_ms = m.time_mean_ms = m.time_ms;
    return m;
  }
  std::vector<Measurement> retime(const std::vector<RetimeCandidate>& cs, int rounds) override {
    std::vector<Measurement> out;
    for (const auto& c : cs) {
      Measurement m;
      m.time_ms = time_of(c.config);
      m.samples_ms.assign(static_cast<std::size_t>(rounds), m.time_ms);
      // The ranking rounds disagree with the timing rounds: the slowest is ranked first.
      if (rank_reversed) m.rank_ms = 1.0 / m.time_ms;
      out.push_back(m);
    }
    return out;
  }
  bool rank_reversed = false;
  double time_of(const Config& c) const {
    double t = 1.0;
    for (std::size_t i = 0; i < c.size(); ++i)
      t *= 1.0 + 0.1 * static_cast<double>((c[i] * 5 + i) % 4);
    return t;
  }

 private:
  const KernelInstance& instance_;
};

KernelSpec small_reduce(const Registry& registry) {
  KernelSpec k = registry.get("reduce");
  for (auto& p : k.params) {
    if (p.name == "variant") p.values = {Value(7), Value(8), Value(9)}, p.default_index = 0;
    if (p.name == "elements_per_thread")
      p.values = {Value(2), Value(4), Value(8)}, p.default_index = 0;
    if (p.name == "maxrregcount" || p.name == "launch_bounds" || p.name == "blocks_per_sm")
      p.values = {p.values[0]}, p.default_index = 0;
  }
  return k;
}

// A brute force of small_reduce into `db` with QuickBackend, its leaders re-timed.
TuneSummary tune_small_reduce(const std::filesystem::path& db, int retime_top,
                              bool rank_reversed = false) {
  Registry registry;
  register_builtin_kernels(registry);
  const KernelInstance instance(small_reduce(registry), Problem{{"n", 1 << 20}},
                                DeviceLimits::for_arch(90));
  Store store = Store::open(db);
  QuickBackend backend(instance);
  backend.rank_reversed = rank_reversed;
  auto strategy = make_strategy("brute_force");
  TuneOptions options;
  options.retime_top = retime_top;
  return tune(instance, backend, store, *strategy, options, nullptr);
}

TEST(ReportOfATuningRun, ReadsTheTunersRetimingAsFinalists) {
  test::TempDir dir;
  Registry registry;
  register_builtin_kernels(registry);
  const KernelInstance instance(small_reduce(registry), Problem{{"n", 1 << 20}},
                                DeviceLimits::for_arch(90));
  const std::int64_t run_id = tune_small_reduce(dir / "t.db", 4).run_id;
  Store store = Store::open(dir / "t.db", Store::Mode::kReadOnly);
  const Report r = build_report(store, {});
  const ReportRun& run = r.studies.at(0).runs.at(0);
  EXPECT_EQ(run.run.id, run_id);
  EXPECT_EQ(run.search.size(), instance.space().enumerate().size());
  EXPECT_EQ(run.retimed.size(), 4u);
  const DeviceAnalysis& a = r.studies[0].devices[0];
  EXPECT_EQ(a.finalists.size(), 4u);
  EXPECT_TRUE(a.best_is_stored);
  EXPECT_GT(a.by_status.at(TrialStatus::kWrongResult), 0u);
  // Parameters in the kernel's declared order, from its spec.
  ASSERT_GE(a.params.size(), 3u);
  EXPECT_EQ(a.params[0], "block_size");
  EXPECT_EQ(a.params[1], "variant");
  EXPECT_FALSE(render_markdown(r).empty());
}

TEST(ReportOfATuningRun, MarksTheStoredBestAmongTheFinalistsWhereverItsTimeRanks) {
  test::TempDir dir;
  const TuneSummary s = tune_small_reduce(dir / "t.db", 3, /*rank_reversed=*/true);
  ASSERT_TRUE(s.best.has_value());
  const std::string winner = s.best->config_key;
  ASSERT_EQ(s.finalists.size(), 3u);
  // Ranked first although its timing rounds make it the slowest of the three.
  EXPECT_GT(s.best->time_ms, s.finalists[1].time_ms);
  EXPECT_GT(s.best->time_ms, s.finalists[2].time_ms);
  Store store = Store::open(dir / "t.db", Store::Mode::kReadOnly);
  const Report r = build_report(store, {});
  const DeviceAnalysis& a = r.studies.at(0).devices.at(0);
  ASSERT_EQ(a.finalists.size(), 3u);
  ASSERT_TRUE(a.best_is_stored && a.best.has_value());
  EXPECT_EQ(a.best->config_key, winner);
  EXPECT_EQ(a.finalists.back().config_key, winner);  // the table lists them by time
  const std::string md = render_markdown(r);
  EXPECT_TRUE(test::contains(md, "| 3 | `" + winner + "` **best** |")) << md;
  const std::string html = render_html(r);
  const std::size_t table = html.find("Final interleaved re-timing");
  ASSERT_NE(table, std::string::npos);
  const std::size_t marked = html.find("<tr class=\"best\">", table);
  ASSERT_NE(marked, std::string::npos);
  EXPECT_EQ(html.find("<tr class=\"best\">", marked + 1), std::string::npos);
  const std::size_t row_end = html.find("</tr>", marked);
  EXPECT_NE(html.substr(marked, row_end - marked).find(">3<"), std::string::npos)
      << html.substr(marked, row_end - marked);
}

// --- T4 export, validated against the vendored schemas. ---

// Validates `doc` against the JSON Schema keywords the T4 schemas use; returns the problems.
void validate(const json& schema, const json& doc, const std::string& where,
              std::vector<std::string>& problems) {
  if (schema.contains("type")) {
    std::vector<std::string> types;
    if (schema["type"].is_array())
      for (const auto& t : schema["type"]) types.push_back(t.get<std::string>());
    else
      types.push_back(schema["type"].get<std::string>());
    const auto is = [&](const std::string& t) {
      if (t == "object") return doc.is_object();
      if (t == "array") return doc.is_array();
      if (t == "string") return doc.is_string();
      if (t == "number") return doc.is_number();
      if (t == "integer") return doc.is_number_integer();
      if (t == "boolean") return doc.is_boolean();
      if (t == "null") return doc.is_null();
      return false;
    };
    if (std::none_of(types.begin(), types.end(), is)) {
      problems.push_back(where + ": expected " + schema["type"].dump() + ", got " +
                         doc.dump().substr(0, 80));
      return;
    }
  }
  if (schema.contains("enum") &&
      std::find(schema["enum"].begin(), schema["enum"].end(), doc) == schema["enum"].end())
    problems.push_back(where + ": " + doc.dump() + " is not one of " + schema["enum"].dump());
  if (schema.contains("pattern") && doc.is_string() &&
      !std::regex_search(doc.get<std::string>(), std::regex(schema["pattern"].get<std::string>())))
    problems.push_back(where + ": " + doc.dump() + " does not match " + schema["pattern"].dump());
  if (schema.contains("minimum") && doc.is_number() &&
      doc.get<double>() < schema["minimum"].get<double>())
    problems.push_back(where + ": below the minimum");
  if (doc.is_object()) {
    if (schema.contains("required"))
      for (const auto& r : schema["required"])
        if (!doc.contains(r.get<std::string>()))
          problems.push_back(where + ": missing required '" + r.get<std::string>() + "'");
    if (schema.contains("properties"))
      for (const auto& [name, sub] : schema["properties"].items())
        if (doc.contains(name)) validate(sub, doc[name], where + "." + name, problems);
  }
  if (doc.is_array() && schema.contains("items"))
    for (std::size_t i = 0; i < doc.size(); ++i)
      validate(schema["items"], doc[i], where + "[" + std::to_string(i) + "]", problems);
}

json schema(const char* name) {
  return json::parse(test::read_file(fs::path(KTUNE_TEST_DATA_DIR) / "t4" / name));
}

// JSON has no NaN; nlohmann writes NaN as null. No number the export writes may be null.
void no_nulls(const json& j, const std::string& where) {
  if (j.is_null()) ADD_FAILURE() << where << " is null";
  if (j.is_object())
    for (const auto& [k, v] : j.items()) no_nulls(v, where + "." + k);
  if (j.is_array())
    for (std::size_t i = 0; i < j.size(); ++i)
      no_nulls(j[i], where + "[" + std::to_string(i) + "]");
}

TEST_F(Report_, T4ResultsFollowTheSchema) {
  Store store = Store::open(db_path_, Store::Mode::kReadOnly);
  const json doc = json::parse(t4_results(store, run2_));
  std::vector<std::string> problems;
  validate(schema("results-schema.json"), doc, "$", problems);
  for (const auto& p : problems) ADD_FAILURE() << p;
  no_nulls(doc, "$");
  EXPECT_EQ(doc["schema_version"], "1.0.0");
  // Every search evaluation, in order; the re-timing is metadata, not a result.
  ASSERT_EQ(doc["results"].size(), 9u);
  EXPECT_EQ(doc["metadata"]["ktune"]["retimed"].size(), 3u);
  // The newer AutoTuningAssociation T4 schema's stricter constraints.
  const json& meta = doc["metadata"];
  EXPECT_EQ(meta["compute_api"], "CUDA");
  EXPECT_EQ(meta["timeunit"], "milliseconds");
  EXPECT_EQ(meta["autotuner"], "ktune");
  EXPECT_EQ(meta["device"], "NVIDIA H100 80GB HBM3");
  std::map<std::string, int> invalidity;
  for (const auto& r : doc["results"]) {
    EXPECT_TRUE(r["correctness"] == 0 || r["correctness"] == 1);
    for (const auto& o : r["objectives"]) EXPECT_TRUE(o.is_string());
    for (const auto& t : r["times"]["runtimes"]) EXPECT_TRUE(t.is_number());
    EXPECT_TRUE(r["configuration"].contains("block_size"));
    EXPECT_TRUE(r["configuration"]["block_size"].is_number_integer());
    ++invalidity[r["invalidity"].get<std::string>()];
    const json& time = r["measurements"][0];
    EXPECT_EQ(time["name"], "time");
    if (r["invalidity"] == "correct") {
      EXPECT_TRUE(time["value"].is_number());
      EXPECT_EQ(r["times"]["runtimes"].size(), 3u);
    } else {
      EXPECT_TRUE(time["value"].is_string());  // Kernel Tuner's error names
    }
  }
  EXPECT_EQ(invalidity["correct"], 7);
  EXPECT_EQ(invalidity["compile"], 1);
  EXPECT_EQ(invalidity["runtime"], 1);
  EXPECT_EQ(doc["results"][2]["measurements"][0]["value"], "CompilationFailedConfig");
}

TEST_F(Report_, T4MetadataFollowsTheSchema) {
  Store store = Store::open(db_path_, Store::Mode::kReadOnly);
  const json doc = json::parse(t4_metadata(store, run3_));
  std::vector<std::string> problems;
  validate(schema("metadata-schema.json"), doc, "$", problems);
  for (const auto& p : problems) ADD_FAILURE() << p;
  no_nulls(doc, "$");
  EXPECT_EQ(doc["metadata"]["environment"]["device_query"]["ktune"]["name"], "NVIDIA H200");
}

TEST(T4, MapsEveryStatus) {
  std::set<std::string> allowed = {"timeout",     "compile",     "runtime",
                                   "correctness", "constraints", "correct"};
  for (int i = 0; i < kTrialStatusCount; ++i)
    EXPECT_TRUE(allowed.count(std::string(t4_invalidity(static_cast<TrialStatus>(i))))) << i;
  EXPECT_EQ(t4_invalidity(TrialStatus::kOk), "correct");
  EXPECT_EQ(t4_invalidity(TrialStatus::kWrongResult), "correctness");
  EXPECT_EQ(t4_invalidity(TrialStatus::kInvalid), "constraints");
  EXPECT_EQ(t4_invalidity(TrialStatus::kTimeout), "timeout");
}

// --- The command. ---

TEST_F(Report_, CliWritesHtmlMarkdownAndT4) {
  const fs::path cache = dir_ / "cache";
  const std::string db = db_path_.string();
  auto r =
      test::run_ktune({"report", "reduce", "--db", db, "-o", "report.html"}, dir_.path(), cache);
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(test::contains(r.err, "wrote report.html (3 runs, 33 trials)")) << r;
  const std::string html = test::read_file(dir_ / "report.html");
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_TRUE(test::contains(html, "<svg class=\"plot\""));

  r = test::run_ktune({"report", "--db", db, "--format", "md", "--device-name", "H200"},
                      dir_.path(), cache);
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(test::contains(r.out, "## reduce [n=16777216]"));
  EXPECT_TRUE(test::contains(r.out, "### Parameter effects"));
  EXPECT_TRUE(test::contains(r.out, "| #3 |")) << r.out;
  EXPECT_FALSE(test::contains(r.out, "| #1 |"));

  r = test::run_ktune(
      {"report", "--db", db, "-o", "r.md", "-p", "n=2**24", "--run", std::to_string(run1_)},
      dir_.path(), cache);
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(test::contains(test::read_file(dir_ / "r.md"), "# ktune search report"));

  // --t4 exports one run; several matching is a usage error that lists them.
  r = test::run_ktune({"report", "--db", db, "--t4", "t4.json"}, dir_.path(), cache);
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(test::contains(
      r.err, "--t4 exports one run, and 3 runs match (1, 2, 3); pick one with --run ID"))
      << r;
  r = test::run_ktune(
      {"report", "--db", db, "--run", "2", "--t4", "t4.json", "--t4-metadata", "meta.json"},
      dir_.path(), cache);
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(r.out.empty()) << r;  // only the export: no report unless -o or --format asks
  EXPECT_EQ(json::parse(test::read_file(dir_ / "t4.json"))["results"].size(), 9u);
  EXPECT_TRUE(json::parse(test::read_file(dir_ / "meta.json")).contains("metadata"));
}

TEST_F(Report_, CliErrors) {
  const fs::path cache = dir_ / "cache";
  auto r = test::run_ktune({"report", "--db", (dir_ / "missing.db").string()}, dir_.path(), cache);
  EXPECT_EQ(r.code, 5) << r;
  r = test::run_ktune({"report", "--db", db_path_.string(), "--format", "pdf"}, dir_.path(), cache);
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(test::contains(r.err, "--format 'pdf': expected html, md or json")) << r;
  r = test::run_ktune({"report", "--db", db_path_.string(), "--device-name", "MI300"}, dir_.path(),
                      cache);
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(
      test::contains(r.err, "no run matches (--device-name MI300); it holds reduce (3 runs)"))
      << r;
  r = test::run_ktune({"report", "--help"}, dir_.path(), cache);
  EXPECT_EQ(r.code, 0) << r;
  EXPECT_TRUE(test::contains(r.out, "--t4")) << r;
  r = test::run_ktune({"--help"}, dir_.path(), cache);
  EXPECT_TRUE(test::contains(r.out, "report")) << r;
}

}  // namespace
}  // namespace ktune
