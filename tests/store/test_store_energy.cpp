// Energies in the store (schema 11): each trial keeps its power and energy, update_pareto keeps
// the configurations no other beats in both time and energy (each by its latest trial with an
// energy), merge recomputes the set from the union, and the schema refuses a set member that is
// not an ok trial with an energy.
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "store/store_test_util.h"

namespace ktune::test {
namespace {

class StoreEnergy : public StoreTest {
 protected:
  std::filesystem::path file(const std::string& name) { return dir_ / name; }
};

TrialRecord with_energy(const Seeded& s, const std::string& key, double ms, double joules) {
  TrialRecord t = make_trial(s, key, ms);
  t.energy_j = joules;
  t.power_w = joules / (ms * 1e-3);
  return t;
}

std::vector<std::string> keys_of(const std::vector<TrialRecord>& trials) {
  std::vector<std::string> out;
  for (const TrialRecord& t : trials) out.push_back(t.config_key);
  return out;
}

TEST_F(StoreEnergy, ATrialKeepsItsEnergyAndTheSetHoldsWhatNothingBeatsInBoth) {
  Store store = Store::open(db_path_);
  const Seeded s = seed(store);
  const std::int64_t id = store.add_trial(with_energy(s, "b=256", 1.0, 0.40));
  store.add_trial(with_energy(s, "b=128", 1.1, 0.30));
  store.add_trial(with_energy(s, "b=64", 1.2, 0.35));  // beaten by 128 in both
  store.add_trial(make_trial(s, "b=32", 0.9));         // no energy: not in the set
  TrialRecord cut = with_energy(s, "b=16", 0.95, 0.1);
  cut.cut = true;  // a cut trial never counts
  store.add_trial(cut);
  store.add_trial(make_trial(s, "b=8", 0, TrialStatus::kWrongResult));
  const TrialRecord back = store.trials_for(s.kernel, s.device, s.problem).front();
  EXPECT_EQ(back.id, id);
  EXPECT_DOUBLE_EQ(back.energy_j, 0.40);
  EXPECT_DOUBLE_EQ(back.power_w, 400);
  EXPECT_EQ(store.update_pareto(s.kernel, s.device, s.problem), 2u);
  EXPECT_EQ(keys_of(store.pareto(s.kernel, s.device, s.problem)),
            (std::vector<std::string>{"b=256", "b=128"}));
  // A configuration's latest trial replaces its earlier one: 256 measured again, worse.
  store.add_trial(with_energy(s, "b=256", 1.3, 0.45));
  EXPECT_EQ(store.update_pareto(s.kernel, s.device, s.problem), 1u);
  EXPECT_EQ(keys_of(store.pareto(s.kernel, s.device, s.problem)),
            (std::vector<std::string>{"b=128"}));
}

TEST_F(StoreEnergy, WithoutEnergiesTheSetIsEmptyAndAnEnergyNotAboveZeroIsNotStored) {
  Store store = Store::open(db_path_);
  const Seeded s = seed(store);
  TrialRecord t = make_trial(s, "b=256", 1.0);
  t.energy_j = -1;
  t.power_w = 0;
  store.add_trial(t);
  EXPECT_EQ(store.update_pareto(s.kernel, s.device, s.problem), 0u);
  EXPECT_TRUE(store.pareto(s.kernel, s.device, s.problem).empty());
  const TrialRecord back = store.trials_for(s.kernel, s.device, s.problem).front();
  EXPECT_TRUE(std::isnan(back.energy_j));
  EXPECT_TRUE(std::isnan(back.power_w));
}

TEST_F(StoreEnergy, TheSchemaRefusesASetMemberWithoutAnEnergy) {
  std::int64_t plain = 0;
  Seeded s;
  {
    Store store = Store::open(db_path_);
    s = seed(store);
    plain = store.add_trial(make_trial(s, "b=256", 1.0));
  }
  SQLite::Database raw(db_path_.string(), SQLite::OPEN_READWRITE);
  SQLite::Statement q(raw,
                      "INSERT INTO pareto (kernel_id, device_id, problem_id, trial_id) "
                      "VALUES (?, ?, ?, ?)");
  q.bind(1, s.kernel);
  q.bind(2, s.device);
  q.bind(3, s.problem);
  q.bind(4, plain);
  EXPECT_THROW(q.exec(), SQLite::Exception);
}

// Replayed and measured runs of one (kernel, device, problem) keep sets of their own: a
// recording's energies never answer for a measurement, nor the other way round.
TEST_F(StoreEnergy, ReplayedAndMeasuredRunsKeepSetsOfTheirOwn) {
  Store store = Store::open(db_path_);
  const Seeded measured = seed(store);
  store.add_trial(with_energy(measured, "b=256", 1.0, 0.40));
  RunRecord run = *store.run(measured.run);
  run.id = 0;
  run.replayed = true;
  Seeded replayed = measured;
  replayed.run = store.begin_run(run);
  store.add_trial(with_energy(replayed, "b=128", 0.9, 0.30));  // beats 256 in both
  EXPECT_EQ(store.update_pareto(measured.kernel, measured.device, measured.problem, false), 1u);
  EXPECT_EQ(store.update_pareto(measured.kernel, measured.device, measured.problem, true), 1u);
  EXPECT_EQ(keys_of(store.pareto(measured.kernel, measured.device, measured.problem, false)),
            (std::vector<std::string>{"b=256"}));
  EXPECT_EQ(keys_of(store.pareto(measured.kernel, measured.device, measured.problem, true)),
            (std::vector<std::string>{"b=128"}));
}

TEST_F(StoreEnergy, MergeRecomputesTheSetFromBothDatabases) {
  const auto run_on = [&](const std::string& name, const std::string& host,
                          const std::vector<std::tuple<std::string, double, double>>& trials) {
    const auto path = file(name);
    Store store = Store::open(path);
    const Seeded s = seed(store);
    std::int64_t first = 0;
    for (const auto& [key, ms, joules] : trials) {
      const std::int64_t id = store.add_trial(with_energy(s, key, ms, joules));
      if (!first) first = id;
    }
    store.set_best(first);
    store.update_pareto(s.kernel, s.device, s.problem);
    SQLite::Database raw(path.string(), SQLite::OPEN_READWRITE);
    raw.exec("UPDATE runs SET host = '" + host + "'");
    return path;
  };
  const auto a = run_on("a.db", "host-a", {{"b=256", 1.0, 0.40}, {"b=128", 1.2, 0.35}});
  const auto b = run_on("b.db", "host-b", {{"b=64", 1.1, 0.30}});
  Store into = Store::open(file("fleet.db"));
  into.merge_from(a);
  into.merge_from(b);
  const BestRecord best = into.bests().at(0);
  EXPECT_EQ(keys_of(into.pareto(best.kernel_id, best.device_id, best.problem_id)),
            (std::vector<std::string>{"b=256", "b=64"}));
}

}  // namespace
}  // namespace ktune::test
