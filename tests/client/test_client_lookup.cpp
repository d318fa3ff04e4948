// Client lookups on a database written with ktune::Store: every device fallback level, the
// exact and nearest problem with its log distance, the options that switch fallbacks off, the
// "no answer" values, kernel versions, caching and launch shapes. No GPU needed.
#include <SQLiteCpp/Database.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "client_test_util.h"

namespace ktune::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class Lookup : public ClientTest {
 protected:
  void SetUp() override {
    ClientTest::SetUp();
    Store store = Store::open(db_path_);
    kernel_ = store.upsert_kernel(reduce_record());
  }

  std::int64_t add(const DeviceRecord& d, std::int64_t n, double time_ms = 0.05,
                   const std::string& config_json =
                       R"({"block_size": 256, "variant": 9, "elements_per_thread": 8})") {
    Store store = Store::open(db_path_);
    BestSpec b = spec(d, n);
    b.time_ms = time_ms;
    b.config_json = config_json;
    return add_best(store, b);
  }

  // A best of this kernel on `d` at problem n, the rest as BestSpec has it.
  BestSpec spec(const DeviceRecord& d, std::int64_t n) const {
    BestSpec b;
    b.kernel_id = kernel_;
    b.device = d;
    b.problem = {{"n", n}};
    return b;
  }

  Client client(const DeviceRecord& d) { return Client(db_path_, client_device(d)); }

  std::int64_t kernel_ = 0;
};

// A run of auto says in its provenance what auto chose, as reports say it.
TEST_F(Lookup, ProvenanceOfAnAutoRunNamesTheStrategyItChose) {
  Store store = Store::open(db_path_);
  BestSpec b = spec(h200(), 1 << 20);
  b.strategy = "auto";
  b.strategy_chosen = "bayes";
  add_best(store, b);
  const LookupResult r = client(h200()).best("reduce", {{"n", 1 << 20}});
  ASSERT_TRUE(r) << r.message;
  EXPECT_EQ(r->provenance.strategy, "auto (bayes)");
}

TEST_F(Lookup, ABestSaysWhichObjectiveChoseIt) {
  Store store = Store::open(db_path_);
  BestSpec b = spec(h200(), 1 << 20);
  b.objective = {"GFLOP/s", true};
  b.objective_value = 812.5;
  add_best(store, b);
  b.problem = {{"n", 1 << 22}};
  b.objective = {};
  b.objective_value = NAN;
  add_best(store, b);
  const LookupResult by_rate = client(h200()).best("reduce", {{"n", 1 << 20}});
  ASSERT_TRUE(by_rate) << by_rate.message;
  EXPECT_EQ(by_rate->objective, "GFLOP/s");
  EXPECT_TRUE(by_rate->objective_higher_is_better);
  EXPECT_DOUBLE_EQ(by_rate->measurement.objective, 812.5);
  const LookupResult by_time = client(h200()).best("reduce", {{"n", 1 << 22}});
  ASSERT_TRUE(by_time) << by_time.message;
  EXPECT_EQ(by_time->objective, "time");
  EXPECT_FALSE(by_time->objective_higher_is_better);
  EXPECT_TRUE(std::isnan(by_time->measurement.objective));
}

// A problem whose configurations were measured with their energies answers by the policy asked
// for among its time-energy Pareto set; one without answers its best and says why.
TEST_F(Lookup, APolicyChoosesAmongTheProblemsTimeEnergyParetoSet) {
  Store store = Store::open(db_path_);
  BestSpec b = spec(h200(), 1 << 20);
  b.time_ms = 0.050;
  b.energy_j = 0.040;
  add_best(store, b);
  const BestRecord best = store.bests().at(0);
  // 128: 4% slower, 20% less energy; 64: 30% slower, 40% less; 512: slower and more energy.
  const std::vector<std::tuple<std::string, double, double>> others = {
      {"block_size=128,variant=9,elements_per_thread=8", 0.052, 0.032},
      {"block_size=64,variant=9,elements_per_thread=8", 0.065, 0.024},
      {"block_size=512,variant=9,elements_per_thread=8", 0.060, 0.045}};
  for (const auto& [key, ms, joules] : others) {
    TrialRecord t = best.trial;
    t.id = 0;
    t.config_key = key;
    t.config_json = R"({"block_size": )" + key.substr(11, key.find(',') - 11) +
                    R"(, "variant": 9, "elements_per_thread": 8})";
    t.time_ms = ms;
    t.energy_j = joules;
    t.power_w = joules / (ms * 1e-3);
    store.add_trial(t);
  }
  EXPECT_EQ(store.update_pareto(best.kernel_id, best.device_id, best.problem_id), 3u);
  b.problem = {{"n", 1 << 22}};  // a problem without energies
  b.energy_j = NAN;
  add_best(store, b);

  Client c = client(h200());
  const auto pick = [&](const std::string& policy, std::int64_t n = 1 << 20) {
    LookupOptions o;
    o.policy = EnergyPolicy::parse(policy);
    const LookupResult r = c.best("reduce", {{"n", n}}, o);
    EXPECT_TRUE(r) << r.message;
    return r.best;
  };
  EXPECT_EQ(pick("fastest")->value("block_size"), 256);
  EXPECT_DOUBLE_EQ(pick("fastest")->measurement.energy_j, 0.040);
  EXPECT_EQ(pick("least-energy")->value("block_size"), 64);
  EXPECT_DOUBLE_EQ(pick("least-energy")->measurement.time_ms, 0.065);
  EXPECT_EQ(pick("least-energy-within=5%")->value("block_size"), 128);
  EXPECT_EQ(pick("least-energy-within=5%")->policy, "least-energy-within=5%");
  EXPECT_EQ(pick("least-energy-within=5%")->policy_note, "");
  EXPECT_EQ(pick("least-energy-within=1%")->value("block_size"), 256);
  const auto plain = pick("least-energy", 1 << 22);
  EXPECT_EQ(plain->value("block_size"), 256);
  EXPECT_NE(plain->policy_note.find("no energy was measured"), std::string::npos)
      << plain->policy_note;
  EXPECT_TRUE(std::isnan(plain->measurement.energy_j));
}

TEST_F(Lookup, ExactDeviceAndProblemWithMeasurementAndProvenance) {
  const std::int64_t trial = add(h200(), 1 << 24, 0.0213);
  Client c = client(h200());
  const LookupResult r = c.best("reduce", {{"n", 1 << 24}});
  ASSERT_TRUE(r) << r.message;
  EXPECT_EQ(r.status, LookupResult::Status::kFound);
  EXPECT_EQ(r->device_match, DeviceMatch::kExactDevice);
  EXPECT_EQ(r->problem_match, ProblemMatch::kExact);
  EXPECT_EQ(r->problem_distance, 0);
  EXPECT_EQ(r->value("block_size"), 256);
  EXPECT_EQ(r->value("variant"), 9);
  EXPECT_EQ(r->config.at("elements_per_thread"), Value(8));
  EXPECT_EQ(r->config_key, "block_size=256,variant=9,elements_per_thread=8");
  EXPECT_EQ(r->problem, (Problem{{"n", 1 << 24}}));
  EXPECT_EQ(r->problem_key, "n=16777216");
  EXPECT_DOUBLE_EQ(r->measurement.time_ms, 0.0213);
  EXPECT_DOUBLE_EQ(r->measurement.time_min_ms, 0.0213 * 0.98);
  EXPECT_DOUBLE_EQ(r->measurement.time_spread, 0.02);
  EXPECT_EQ(r->measurement.sample_count, 30);
  EXPECT_DOUBLE_EQ(r->measurement.gbps, 1000);
  EXPECT_TRUE(std::isnan(r->measurement.gflops));
  const BestProvenance& p = r->provenance;
  EXPECT_EQ(p.device_name, "NVIDIA H200");
  EXPECT_EQ(p.device_arch, "sm_90");
  EXPECT_EQ(p.trial_id, trial);
  EXPECT_GT(p.run_id, 0);
  EXPECT_EQ(p.kernel_id, kernel_);
  EXPECT_EQ(p.source_hash, "src-1");
  EXPECT_EQ(p.space_hash, "space-1");
  EXPECT_EQ(p.strategy, "brute_force");
  EXPECT_EQ(p.host, ProcessIdentity::current().host);  // the process that wrote the run
  EXPECT_EQ(p.compile_arch, "sm_90");
  EXPECT_THAT(p.measured_at, HasSubstr("T"));
  EXPECT_THAT(p.best_updated_at, HasSubstr("Z"));
  EXPECT_FALSE(p.run_finished_at.empty());
  EXPECT_EQ(r->describe(), "exact device, exact problem");
  expect_error(ErrorKind::kUsage, "no parameter 'blocks'", [&] { (void)r->value("blocks"); });
}

TEST_F(Lookup, SameArchitectureWhenTheDeviceWasNotTuned) {
  add(h200(), 1 << 24);
  Client c = client(h100_sxm());
  const LookupResult r = c.best("reduce", {{"n", 1 << 24}});
  ASSERT_TRUE(r) << r.message;
  EXPECT_EQ(r->device_match, DeviceMatch::kSameArch);
  EXPECT_EQ(r->provenance.device_name, "NVIDIA H200");
  EXPECT_EQ(r->describe(), "same architecture (NVIDIA H200, sm_90), exact problem");
}

TEST_F(Lookup, SameArchitecturePrefersTheSameNameThenTheClosestSmCount) {
  add(h100_pcie(), 1 << 24, 0.03, R"({"block_size": 128, "variant": 9, "elements_per_thread": 8})");
  add(h200(), 1 << 24, 0.02, R"({"block_size": 512, "variant": 9, "elements_per_thread": 8})");
  // 132 SMs like the H200, another name: the H200 (closest SM count) answers.
  {
    Client c = client(device("NVIDIA H100 NVL", "sm_90", 132, 94'000'000'000));
    const LookupResult r = c.best("reduce", {{"n", 1 << 24}});
    ASSERT_TRUE(r) << r.message;
    EXPECT_EQ(r->provenance.device_name, "NVIDIA H200");
    EXPECT_EQ(r->value("block_size"), 512);
  }
  // Same name as the PCIe card (other memory size): the PCIe card answers.
  {
    Client c = client(device("NVIDIA H100 PCIe", "sm_90", 132, 94'000'000'000));
    const LookupResult r = c.best("reduce", {{"n", 1 << 24}});
    ASSERT_TRUE(r) << r.message;
    EXPECT_EQ(r->provenance.device_name, "NVIDIA H100 PCIe");
    EXPECT_EQ(r->value("block_size"), 128);
  }
}

TEST_F(Lookup, SameMajorTakesTheNewestMinorAtOrBelowTheDevice) {
  add(a100(), 1 << 24, 0.10, R"({"block_size": 64, "variant": 9, "elements_per_thread": 8})");
  add(a40(), 1 << 24, 0.20, R"({"block_size": 128, "variant": 9, "elements_per_thread": 8})");
  add(rtx4090(), 1 << 24, 0.30, R"({"block_size": 512, "variant": 9, "elements_per_thread": 8})");
  // sm_87 (Jetson Orin): sm_86 is the newest minor at or below 7; sm_89 is above it.
  {
    Client c = client(device("Orin", "sm_87", 16, 32'000'000'000));
    const LookupResult r = c.best("reduce", {{"n", 1 << 24}});
    ASSERT_TRUE(r) << r.message;
    EXPECT_EQ(r->device_match, DeviceMatch::kSameMajor);
    EXPECT_EQ(r->provenance.device_arch, "sm_86");
    EXPECT_EQ(r->value("block_size"), 128);
  }
  // sm_89 of another name: the same architecture wins over the major fallback.
  {
    Client c = client(device("NVIDIA L40S", "sm_89", 142, 48'000'000'000));
    const LookupResult r = c.best("reduce", {{"n", 1 << 24}});
    ASSERT_TRUE(r) << r.message;
    EXPECT_EQ(r->device_match, DeviceMatch::kSameArch);
    EXPECT_EQ(r->provenance.device_arch, "sm_89");
  }
  // sm_80 of another name: same architecture (A100).
  {
    Client c = client(device("NVIDIA A30", "sm_80", 56, 24'000'000'000));
    const LookupResult r = c.best("reduce", {{"n", 1 << 24}});
    ASSERT_TRUE(r) << r.message;
    EXPECT_EQ(r->device_match, DeviceMatch::kSameArch);
    EXPECT_EQ(r->value("block_size"), 64);
  }
}

TEST_F(Lookup, NeverANewerMinorNorAnotherMajor) {
  add(rtx4090(), 1 << 24);
  add(h200(), 1 << 24);
  Client c = client(a40());  // sm_86: sm_89 is newer, sm_90 another major
  const LookupResult r = c.best("reduce", {{"n", 1 << 24}});
  EXPECT_FALSE(r);
  EXPECT_EQ(r.status, LookupResult::Status::kNoMatch);
  EXPECT_EQ(r.best, nullptr);
  EXPECT_THAT(r.message, HasSubstr("reduce[n=16777216]: no stored best for NVIDIA A40 (sm_86)"));
  EXPECT_THAT(r.message, HasSubstr("NVIDIA GeForce RTX 4090 (sm_89)"));
  EXPECT_THAT(r.message, HasSubstr("NVIDIA H200 (sm_90)"));
}

TEST_F(Lookup, ReplayedRunsNeverAnswer) {
  // The replay backend stores its runs as replayed, under the recording's device and arch.
  Store store = Store::open(db_path_);
  BestSpec b = spec(h200(), 1 << 24);
  b.replayed = true;
  add_best(store, b);
  Client c = client(h200());
  const LookupResult r = c.best("reduce", {{"n", 1 << 24}});
  EXPECT_FALSE(r);
  EXPECT_EQ(r.status, LookupResult::Status::kNoMatch);
  // The message says why the device's own runs do not answer, and does not call it tuned.
  EXPECT_THAT(r.message, HasSubstr("reduce[n=16777216]: no stored best for NVIDIA H200 (sm_90)"));
  EXPECT_THAT(r.message, HasSubstr("the stored runs of NVIDIA H200 (sm_90) were replayed from "
                                   "recordings, and replayed runs never answer the client"));
  EXPECT_THAT(r.message, Not(HasSubstr("tuned on")));
  EXPECT_THAT(r.message, Not(HasSubstr("nothing of this kernel has been tuned")));
}

TEST_F(Lookup, TheNoMatchMessageTellsMeasuredDevicesFromReplayedOnes) {
  Store store = Store::open(db_path_);
  BestSpec b = spec(h200(), 1 << 24);
  b.replayed = true;
  add_best(store, b);
  b.device = h100_sxm();
  add_best(store, b);
  add(a100(), 1 << 24);  // measured, of another major
  // A device with a measured best and a replayed one counts as tuned.
  add(rtx4090(), 1 << 24);
  b.device = rtx4090();
  b.problem = {{"n", 1 << 20}};
  add_best(store, b);
  const LookupResult r = client(h200()).best("reduce", {{"n", 1 << 24}});
  EXPECT_EQ(r.status, LookupResult::Status::kNoMatch);
  EXPECT_THAT(r.message,
              HasSubstr("; tuned on: NVIDIA A100-SXM4-80GB (sm_80), NVIDIA GeForce RTX 4090 "
                        "(sm_89); the stored runs of NVIDIA H100 80GB HBM3 (sm_90), NVIDIA H200 "
                        "(sm_90) were replayed from recordings, and replayed runs never answer "
                        "the client"))
      << r.message;
}

TEST_F(Lookup, TheExactDeviceAtANearbyProblemBeatsAnotherDeviceAtTheExactProblem) {
  add(h200(), 1 << 25, 0.04, R"({"block_size": 512, "variant": 9, "elements_per_thread": 8})");
  add(h100_sxm(), 1 << 24, 0.02, R"({"block_size": 128, "variant": 9, "elements_per_thread": 8})");
  Client c = client(h200());
  const LookupResult r = c.best("reduce", {{"n", 1 << 24}});
  ASSERT_TRUE(r) << r.message;
  EXPECT_EQ(r->device_match, DeviceMatch::kExactDevice);
  EXPECT_EQ(r->problem_match, ProblemMatch::kNearest);
  EXPECT_EQ(r->value("block_size"), 512);
}

TEST_F(Lookup, NearestProblemByLogDistance) {
  add(h200(), 1 << 20, 0.01, R"({"block_size": 64, "variant": 9, "elements_per_thread": 8})");
  add(h200(), 1 << 24, 0.02, R"({"block_size": 256, "variant": 9, "elements_per_thread": 8})");
  add(h200(), 1 << 28, 0.30, R"({"block_size": 512, "variant": 9, "elements_per_thread": 8})");
  Client c = client(h200());
  // 2^23 is one doubling from 2^24 and three from 2^20.
  LookupResult r = c.best("reduce", {{"n", 1 << 23}});
  ASSERT_TRUE(r) << r.message;
  EXPECT_EQ(r->problem_match, ProblemMatch::kNearest);
  EXPECT_EQ(r->problem, (Problem{{"n", 1 << 24}}));
  EXPECT_EQ(r->query, (Problem{{"n", 1 << 23}}));
  EXPECT_NEAR(r->problem_distance, 1.0, 1e-6);
  EXPECT_EQ(r->describe(), "exact device, nearest problem (n=16777216, log2 distance 1)");
  // Far beyond every tuned size: the largest.
  r = c.best("reduce", {{"n", std::int64_t{1} << 33}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->problem, (Problem{{"n", 1 << 28}}));
  EXPECT_NEAR(r->problem_distance, 5.0, 1e-6);
  // Halfway in log terms between 2^20 and 2^24: a tie goes to the larger problem.
  r = c.best("reduce", {{"n", 1 << 22}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->problem, (Problem{{"n", 1 << 24}}));
  // Not halfway in linear terms: 3 * 2^20 is nearer 2^20 (log2 3 = 1.58) than 2^24 (2.42).
  r = c.best("reduce", {{"n", 3 << 20}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->problem, (Problem{{"n", 1 << 20}}));
  EXPECT_NEAR(r->problem_distance, std::log2(3.0), 1e-6);
}

// A best whose trial is damaged (text where the time belongs, a negative time) never answers:
// the next candidate does, and no answer reads 0 ms.
TEST_F(Lookup, ABestWhoseTimeIsDamagedNeverAnswers) {
  add(h200(), 1 << 20, 0.01, R"({"block_size": 64, "variant": 9, "elements_per_thread": 8})");
  const std::int64_t text =
      add(h200(), 1 << 24, 0.02, R"({"block_size": 256, "variant": 9, "elements_per_thread": 8})");
  const std::int64_t negative =
      add(h200(), 1 << 28, 0.30, R"({"block_size": 512, "variant": 9, "elements_per_thread": 8})");
  {
    SQLite::Database raw(db_path_.string(), SQLite::OPEN_READWRITE);
    raw.exec("UPDATE trials SET time_ms = 'fast' WHERE id = " + std::to_string(text));
    raw.exec("UPDATE trials SET time_ms = -1 WHERE id = " + std::to_string(negative));
  }
  Client c = client(h200());
  for (const std::int64_t n : {std::int64_t{1} << 24, std::int64_t{1} << 28}) {
    const LookupResult r = c.best("reduce", {{"n", n}});
    ASSERT_TRUE(r) << r.message;
    EXPECT_EQ(r->problem, (Problem{{"n", 1 << 20}})) << n;
    EXPECT_DOUBLE_EQ(r->measurement.time_ms, 0.01) << n;
  }
}

TEST_F(Lookup, ProblemDistanceIsTheSumOfLogRatiosOverParameters) {
  EXPECT_DOUBLE_EQ(problem_distance({{"n", 1 << 20}}, {{"n", 1 << 24}}), 4.0);
  EXPECT_DOUBLE_EQ(problem_distance({{"n", 3000}}, {{"n", 1000}}), std::log2(3.0));
  EXPECT_DOUBLE_EQ(problem_distance({{"m", 1024}, {"n", 4096}}, {{"m", 4096}, {"n", 1024}}), 4.0);
  EXPECT_EQ(problem_distance({{"n", 7}}, {{"n", 7}}), 0.0);
  EXPECT_EQ(problem_distance({{"n", 0}}, {{"n", 0}}), 0.0);
  // Zero and negative values compare on sign(v) log2(1 + |v|).
  EXPECT_DOUBLE_EQ(problem_distance({{"n", 0}}, {{"n", 1}}), 1.0);
  EXPECT_DOUBLE_EQ(problem_distance({{"n", 0}}, {{"n", 3}}), 2.0);
  EXPECT_GT(problem_distance({{"n", -8}}, {{"n", 8}}), 6.0);
  EXPECT_TRUE(std::isinf(problem_distance({{"n", 1}}, {{"m", 1}})));
  EXPECT_TRUE(std::isinf(problem_distance({{"n", 1}}, {{"n", 1}, {"m", 1}})));
}

TEST_F(Lookup, NearestOnlyAmongProblemsWithTheSameParameterNames) {
  // Version 2 of the kernel has a second problem parameter; its problems answer only queries
  // with both names, version 1's only queries with n alone.
  Store store = Store::open(db_path_);
  const std::int64_t v2 = store.upsert_kernel(
      reduce_record("src-2", R"([{"name": "n", "default": 1024}, {"name": "m", "default": 1}])"));
  BestSpec b;
  b.kernel_id = v2;
  b.device = h200();
  b.problem = {{"n", 1 << 20}, {"m", 4}};
  b.config_json = R"({"block_size": 64, "variant": 9, "elements_per_thread": 8})";
  add_best(store, b);
  b.kernel_id = kernel_;
  b.problem = {{"n", 1 << 10}};
  b.config_json = R"({"block_size": 512, "variant": 9, "elements_per_thread": 8})";
  add_best(store, b);
  Client c = client(h200());
  // m is filled from the newest version's default (1): {n, m} names, so version 2's problem.
  LookupResult r = c.best("reduce", {{"n", 1 << 10}});
  ASSERT_TRUE(r) << r.message;
  EXPECT_EQ(r->query, (Problem{{"m", 1}, {"n", 1 << 10}}));
  EXPECT_EQ(r->problem, (Problem{{"m", 4}, {"n", 1 << 20}}));
  EXPECT_EQ(r->value("block_size"), 64);
  EXPECT_DOUBLE_EQ(r->problem_distance, 12.0);  // |log2(1/4)| + |log2(2^10/2^20)|
  // A parameter no stored problem has: nothing with the same names.
  r = c.best("reduce", {{"n", 1 << 10}, {"k", 3}});
  EXPECT_FALSE(r);
  EXPECT_EQ(r.status, LookupResult::Status::kNoMatch);
}

TEST_F(Lookup, OptionsSwitchTheFallbacksOff) {
  add(h200(), 1 << 24);
  Client c = client(h100_sxm());
  LookupOptions exact_device;
  exact_device.other_devices = false;
  LookupResult r = c.best("reduce", {{"n", 1 << 24}}, exact_device);
  EXPECT_FALSE(r);
  EXPECT_THAT(r.message, HasSubstr("other devices were not allowed"));

  Client same = client(h200());
  LookupOptions exact_problem;
  exact_problem.nearest_problem = false;
  r = same.best("reduce", {{"n", 1 << 23}}, exact_problem);
  EXPECT_FALSE(r);
  EXPECT_THAT(r.message, HasSubstr("only the exact problem was allowed"));
  EXPECT_TRUE(same.best("reduce", {{"n", 1 << 24}}, exact_problem));

  LookupOptions near;
  near.max_problem_distance = 0.5;
  r = same.best("reduce", {{"n", 1 << 23}}, near);
  EXPECT_FALSE(r);
  EXPECT_THAT(r.message, HasSubstr("within log2 distance 0.5"));
  near.max_problem_distance = 1.5;
  EXPECT_TRUE(same.best("reduce", {{"n", 1 << 23}}, near));
}

TEST_F(Lookup, MissingProblemParametersTakeTheKernelsDefaults) {
  add(h200(), 16777216);
  Client c = client(h200());
  const LookupResult r = c.best("reduce", {});
  ASSERT_TRUE(r) << r.message;
  EXPECT_EQ(r->problem_match, ProblemMatch::kExact);
  EXPECT_EQ(r->query, (Problem{{"n", 16777216}}));
}

TEST_F(Lookup, NoSuchKernelAndNothingTunedAreValuesNotExceptions) {
  Client c = client(h200());
  LookupResult r = c.best("transpose", {{"n", 1}});
  EXPECT_FALSE(r);
  EXPECT_EQ(r.status, LookupResult::Status::kNoKernel);
  EXPECT_EQ(r.message, "transpose: no kernel of that name in " + db_path_.string());
  r = c.best("reduce", {{"n", 1}});
  EXPECT_EQ(r.status, LookupResult::Status::kNoMatch);
  EXPECT_THAT(r.message, HasSubstr("nothing of this kernel has been tuned yet"));
  // Quotes and SQL in names are data: parameters are bound, never spliced into SQL.
  r = c.best("reduce' OR '1'='1", {{"n", 1}});
  EXPECT_EQ(r.status, LookupResult::Status::kNoKernel);
  r = c.best("reduce\"; DROP TABLE best; --", {{"n", 1}});
  EXPECT_EQ(r.status, LookupResult::Status::kNoKernel);
}

TEST_F(Lookup, TheNewestKernelVersionAnswers) {
  add(h200(), 1 << 24, 0.05, R"({"block_size": 64, "variant": 9, "elements_per_thread": 8})");
  Store store = Store::open(db_path_);
  BestSpec b;
  b.kernel_id = store.upsert_kernel(reduce_record("src-2"));
  b.device = h200();
  b.problem = {{"n", 1 << 24}};
  b.config_json = R"({"block_size": 128, "variant": 9, "elements_per_thread": 8})";
  add_best(store, b);
  Client c = client(h200());
  const LookupResult r = c.best("reduce", {{"n", 1 << 24}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->provenance.source_hash, "src-2");
  EXPECT_EQ(r->value("block_size"), 128);
}

TEST_F(Lookup, AnswersAreCachedUntilClearCache) {
  add(h200(), 1 << 24, 0.05, R"({"block_size": 64, "variant": 9, "elements_per_thread": 8})");
  Client c = client(h200());
  const LookupResult first = c.best("reduce", {{"n", 1 << 24}});
  ASSERT_TRUE(first);
  EXPECT_EQ(c.best("reduce", {{"n", 1 << 24}}).best.get(), first.best.get());
  // A newer result written meanwhile is seen after clear_cache().
  {
    Store store = Store::open(db_path_);
    BestSpec b;
    b.kernel_id = kernel_;
    b.device = h200();
    b.problem = {{"n", 1 << 24}};
    b.config_json = R"({"block_size": 512, "variant": 9, "elements_per_thread": 8})";
    add_best(store, b);
  }
  EXPECT_EQ(c.best("reduce", {{"n", 1 << 24}})->value("block_size"), 64);
  c.clear_cache();
  EXPECT_EQ(c.best("reduce", {{"n", 1 << 24}})->value("block_size"), 512);
}

TEST_F(Lookup, LaunchShapeFromTheStoredGeometry) {
  add(h200(), 1 << 24, 0.05, R"({"block_size": 128, "variant": 9, "elements_per_thread": 4})");
  Client c = client(h200());
  const LookupResult r = c.best("reduce", {{"n", 1 << 24}});
  ASSERT_TRUE(r);
  LaunchShape s = c.shape(*r, {{"n", 1 << 24}});
  EXPECT_EQ(s.grid, (std::array<std::uint32_t, 3>{(1 << 24) / 512, 1, 1}));
  EXPECT_EQ(s.block, (std::array<std::uint32_t, 3>{128, 1, 1}));
  EXPECT_EQ(s.shared_mem, 128u * 4);
  // Another problem (the next level of a multi-level reduction); missing names take the
  // tuned problem's values.
  s = c.shape(*r, {{"n", 32768}});
  EXPECT_EQ(s.grid[0], 64u);
  s = c.shape(*r, {{"n", 1000}});
  EXPECT_EQ(s.grid[0], 2u);
  EXPECT_EQ(c.shape(*r, {}).grid[0], (1u << 24) / 512);
  expect_error(ErrorKind::kInput,
               "reduce[block_size=256,variant=9,elements_per_thread=8]: grid.x: is 0", [&] {
                 (void)c.shape(*r, {{"n", 0}});
               });
}

TEST_F(Lookup, ManyThreadsShareOneClient) {
  for (int e = 10; e <= 26; e += 4) add(h200(), std::int64_t{1} << e);
  Client c = client(h200());
  std::vector<std::thread> threads;
  std::atomic<int> found{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        if (c.best("reduce", {{"n", std::int64_t{1} << (10 + (i + t) % 20)}})) ++found;
        if (i % 50 == 0) c.clear_cache();
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(found.load(), 800);
}

}  // namespace
}  // namespace ktune::test
