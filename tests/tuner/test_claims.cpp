// No duplicate work: runs of one job on one database at once (each with its own Store, as
// processes have) claim configurations before measuring them, so each is measured once, and the
// others answer it from the database.
#include <SQLiteCpp/Database.h>
#include <gtest/gtest.h>

#include <memory>
#include <thread>

#include "ktune/replay.h"
#include "ktune/store.h"
#include "ktune/strategy.h"
#include "ktune/tuner.h"
#include "tuner/cli_test_util.h"

namespace ktune::test {
namespace {

TEST(Claims, ConcurrentRunsOnOneDatabaseMeasureEachConfigurationOnce) {
  const auto recording = std::make_shared<Recording>(
      read_kt_cache(std::string(KTUNE_TEST_DATA_DIR) + "/replay/convolution_A100_small.json.gz"));
  const ReplayTarget target = replay_target(*recording, nullptr);
  const KernelInstance instance(target.kernel, target.problem, target.limits);
  TempDir dir;
  { Store create = Store::open(dir / "shared.db"); }
  constexpr int kRuns = 4;
  std::vector<TuneSummary> summaries(kRuns);
  std::vector<std::thread> threads;
  for (int i = 0; i < kRuns; ++i) {
    threads.emplace_back([&, i] {
      Store store =
          Store::open(dir / "shared.db", Store::Mode::kReadWrite, std::chrono::seconds(30));
      ReplayBackend backend(recording);
      auto strategy = make_strategy("brute_force");
      TuneOptions options;
      options.strategy = "brute_force";
      options.retime_top = 0;
      summaries[static_cast<std::size_t>(i)] =
          tune(instance, backend, store, *strategy, options, nullptr, {}, nullptr);
    });
  }
  for (auto& t : threads) t.join();
  std::uint64_t measured = 0, valid = 0;
  instance.space().for_each_valid([&](const Config&) { return ++valid, true; });
  for (const TuneSummary& s : summaries) {
    EXPECT_EQ(s.status, RunStatus::kFinished);
    EXPECT_EQ(s.trials, valid) << "every run saw every configuration";
    measured += s.measured;
  }
  EXPECT_EQ(measured, valid) << "some configuration was measured twice";
  SQLite::Database db((dir / "shared.db").string(), SQLite::OPEN_READONLY);
  EXPECT_EQ(db.execAndGet("SELECT count(*) FROM (SELECT config_key FROM trials WHERE kind = 0 "
                          "GROUP BY config_key HAVING count(*) > 1)")
                .getInt(),
            0);
  EXPECT_EQ(db.execAndGet("SELECT count(*) FROM claims").getInt(), 0) << "claims left behind";
}

}  // namespace
}  // namespace ktune::test
