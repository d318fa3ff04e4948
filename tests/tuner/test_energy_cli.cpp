// Energy from a user's side (docs/energy.md), on a recording with energies and no GPU: `ktune
// tune --objective energy|edp` ranks by joules per run, every run stores the time-energy
// Pareto set, and `ktune best --policy` chooses among it; bad names are refused before anything
// is written.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ktune/store.h"
#include "tuner/cli_test_util.h"

namespace ktune {
namespace {

namespace fs = std::filesystem;
using test::CliResult;
using test::contains;

// A Kernel Tuner cache of four configurations with NVMLObserver's energies (J per run) and
// powers (W): 256 is the fastest, 64 the least energy, 128 within 10% of the fastest's time
// with less energy, 32 slower than 64 and worse in energy (off the front).
std::string cache_with_energies() {
  struct Row {
    int block;
    double ms, joules, watts;
  };
  const std::vector<Row> rows = {
      {32, 1.50, 0.40, 266}, {64, 1.30, 0.26, 200}, {128, 1.05, 0.31, 295}, {256, 1.00, 0.40, 400}};
  nlohmann::json cache = nlohmann::json::object();
  for (const Row& r : rows)
    cache[std::to_string(r.block)] = {{"block_size_x", r.block},     {"time", r.ms},
                                      {"times", {r.ms, r.ms, r.ms}}, {"nvml_energy", r.joules},
                                      {"nvml_power", r.watts},       {"compile_time", 1},
                                      {"verification_time", 0},      {"benchmark_time", 1}};
  const nlohmann::json d = {{"device_name", "NVIDIA H200"},
                            {"kernel_name", "vector_add"},
                            {"problem_size", 1000000},
                            {"tune_params_keys", {"block_size_x"}},
                            {"tune_params", {{"block_size_x", {32, 64, 128, 256}}}},
                            {"objective", "time"},
                            {"cache", cache}};
  return d.dump();
}

class EnergyCli : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(work());
    fs::create_directories(tmp_.path() / "cache");
    test::write_file(work() / "energy.json", cache_with_energies());
  }
  fs::path work() const { return tmp_.path() / "work"; }
  CliResult run(const std::vector<std::string>& args) const {
    return test::run_ktune(args, work(), tmp_.path() / "cache");
  }
  CliResult tune(const std::vector<std::string>& extra) const {
    std::vector<std::string> args = {"tune", "--replay",   "energy.json", "--db",
                                     "e.db", "--strategy", "brute_force", "-q"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run(args);
  }
  nlohmann::json best(const std::string& policy) const {
    const CliResult r = run({"best", "vector_add", "--db", "e.db", "--policy", policy, "--json"});
    EXPECT_EQ(r.code, 0) << r;
    return nlohmann::json::parse(r.out, nullptr, false);
  }
  test::TempDir tmp_;
};

TEST_F(EnergyCli, ARunByTimeStoresTheParetoSetAndThePoliciesChooseAmongIt) {
  const CliResult r = tune({});
  ASSERT_EQ(r.code, 0) << r;
  nlohmann::json j = best("fastest");
  ASSERT_EQ(j["results"].size(), 1u) << j.dump();
  const auto& fastest = j["results"][0];
  EXPECT_EQ(fastest["key"], "block_size_x=256");
  EXPECT_DOUBLE_EQ(fastest["energy_j"].get<double>(), 0.40);
  std::vector<std::string> front;
  for (const auto& p : fastest["pareto"]) front.push_back(p["key"]);
  EXPECT_EQ(front,
            (std::vector<std::string>{"block_size_x=256", "block_size_x=128", "block_size_x=64"}));
  EXPECT_EQ(best("least-energy")["results"][0]["key"], "block_size_x=64");
  EXPECT_EQ(best("least-energy-within=10%")["results"][0]["key"], "block_size_x=128");
  EXPECT_EQ(best("least-energy-within=1%")["results"][0]["key"], "block_size_x=256");
  // The text names the policy and marks its choice in the set.
  const CliResult text = run({"best", "vector_add", "--db", "e.db", "--policy", "least-energy"});
  ASSERT_EQ(text.code, 0) << text;
  EXPECT_TRUE(contains(text.out, "policy least-energy")) << text;
  EXPECT_TRUE(contains(text.out, "time-energy Pareto set, 3 configurations")) << text;
  EXPECT_TRUE(contains(text.out, "block_size_x=64  <-")) << text;
}

// The report shows each configuration's time against its energy and the Pareto set.
TEST_F(EnergyCli, TheReportPlotsTimeAgainstEnergyAndListsTheParetoSet) {
  ASSERT_EQ(tune({}).code, 0);
  CliResult r = run({"report", "vector_add", "--db", "e.db", "-o", "r.html", "-q"});
  ASSERT_EQ(r.code, 0) << r;
  const std::string html = test::read_file(work() / "r.html");
  EXPECT_TRUE(contains(html, "<h3>Time and energy</h3>"));
  EXPECT_TRUE(contains(html, "data-kind=\"pareto\""));
  EXPECT_TRUE(contains(html, "4 configurations with an energy; 3 on the time-energy Pareto set"));
  r = run({"report", "vector_add", "--db", "e.db", "--format", "md", "-o", "r.md", "-q"});
  ASSERT_EQ(r.code, 0) << r;
  const std::string md = test::read_file(work() / "r.md");
  EXPECT_TRUE(contains(md, "### Time-energy Pareto set")) << md;
  EXPECT_TRUE(contains(md, "| 1.3 | 260 | 200 | `block_size_x=64` |")) << md;
}

TEST_F(EnergyCli, TheEnergyObjectiveStoresTheLeastEnergyAsTheBest) {
  CliResult r = tune({"--objective", "energy"});
  ASSERT_EQ(r.code, 0) << r;
  nlohmann::json j = best("fastest");
  EXPECT_EQ(j["results"][0]["key"], "block_size_x=64") << j.dump();
  EXPECT_EQ(j["results"][0]["objective"], "energy");
  // The energy-delay product: 64 gives 0.26 J * 1.30 ms = 0.338, 128 0.31 * 1.05 = 0.326.
  r = run({"tune", "--replay", "energy.json", "--db", "edp.db", "--strategy", "brute_force", "-q",
           "--objective", "edp"});
  ASSERT_EQ(r.code, 0) << r;
  r = run({"best", "vector_add", "--db", "edp.db", "--json"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_EQ(nlohmann::json::parse(r.out)["results"][0]["key"], "block_size_x=128") << r;
}

TEST_F(EnergyCli, UnknownNamesAreRefusedAndNothingIsWritten) {
  CliResult r = tune({"--objective", "joules"});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "--objective 'joules': expected time, energy or edp")) << r;
  r = tune({"--energy-ms", "-5"});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "--energy-ms -5")) << r;
  r = tune({"--objective", "energy", "--energy-ms", "0"});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "needs energy")) << r;
  EXPECT_FALSE(fs::exists(work() / "e.db"));
  ASSERT_EQ(tune({}).code, 0);
  r = run({"best", "vector_add", "--db", "e.db", "--policy", "greenest"});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "unknown policy 'greenest'")) << r;
}

TEST_F(EnergyCli, ARecordingWithoutEnergiesHasNoParetoSetAndThePolicySaysSo) {
  nlohmann::json d = nlohmann::json::parse(cache_with_energies());
  for (auto& [key, e] : d["cache"].items()) e.erase("nvml_energy"), e.erase("nvml_power");
  test::write_file(work() / "energy.json", d.dump());
  ASSERT_EQ(tune({}).code, 0);
  const nlohmann::json j = best("least-energy");
  EXPECT_EQ(j["results"][0]["key"], "block_size_x=256");
  EXPECT_TRUE(j["results"][0]["pareto"].empty());
  EXPECT_TRUE(contains(j["results"][0].value("policy_note", ""), "no energy was measured"));
  // An energy objective on it has no value for any configuration: no best.
  const CliResult r = run({"tune", "--replay", "energy.json", "--db", "none.db", "--strategy",
                           "brute_force", "--objective", "energy"});
  EXPECT_NE(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out + r.err, "not in the recording")) << r;
}

// bench-strategies scores strategies on the recorded energies: with --objective energy the
// optimum is the least energy (64), and a recording without energies is refused by name.
TEST_F(EnergyCli, BenchStrategiesScoresOnTheRecordedEnergies) {
  CliResult r = run({"bench-strategies", "--strategies", "random", "--seeds", "2", "--budgets", "4",
                     "--replay", "energy.json", "--objective", "energy", "--json"});
  ASSERT_EQ(r.code, 0) << r;
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r;
  EXPECT_TRUE(contains(r.out, "\"optimum_ms\": 0.26")) << r;
  r = run({"bench-strategies", "--strategies", "random", "--seeds", "2", "--budgets", "4",
           "--replay", "energy.json", "--objective", "watts"});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "--objective 'watts': expected time, energy or edp")) << r;
  nlohmann::json d = nlohmann::json::parse(cache_with_energies());
  for (auto& [key, e] : d["cache"].items()) e.erase("nvml_energy");
  test::write_file(work() / "plain.json", d.dump());
  r = run({"bench-strategies", "--strategies", "random", "--seeds", "2", "--budgets", "4",
           "--replay", "plain.json", "--objective", "energy"});
  EXPECT_NE(r.code, 0) << r;
  EXPECT_TRUE(contains(r.err, "holds no energies (nvml_energy)")) << r;
}

}  // namespace
}  // namespace ktune
