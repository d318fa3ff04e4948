// GPU test of the compile time limit (docs/compilation.md, "Compilations that do not end"): a
// space holding a configuration that NVRTC compiles for many minutes (tests/data/endless_compile)
// is tuned with the adaptive default; that configuration costs one compile_failed trial and the
// others are measured and verified. Without a CUDA device it skips, saying why.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "common/test_files.h"
#include "ktune/cuda_backend.h"
#include "ktune/store.h"
#include "tuner/cli_test_util.h"

namespace ktune::test {
namespace {

using nlohmann::json;

TEST(GpuCompileTimeout, AConfigurationThatCompilesForMinutesCostsOneTrial) {
  const DeviceQuery q = list_devices();
  if (q.devices.empty()) GTEST_SKIP() << "no CUDA device: " << q.problem;
  TempDir dir;
  const std::string manifest = std::string(KTUNE_TEST_DATA_DIR) + "/endless_compile/endless.toml";
  const CliResult r =
      run_ktune({"tune", "endless_compile", "--plugin", manifest, "--strategy", "brute_force",
                 "--db", (dir / "e.db").string(), "--json", "--samples", "5"},
                dir.path(), dir / "cache");
  ASSERT_EQ(r.code, 0) << r;
  const json s = json::parse(r.out);
  EXPECT_EQ(s["by_status"].value("ok", 0), 5) << s["by_status"].dump();
  EXPECT_EQ(s["by_status"].value("compile_failed", 0), 1) << s["by_status"].dump();
  EXPECT_FALSE(s["best"].is_null());
  const Store store = Store::open(dir / "e.db", Store::Mode::kReadOnly);
  bool timed_out = false;
  for (const TrialRecord& t : store.trials_of_run(s["run_id"].get<std::int64_t>()))
    if (t.status == TrialStatus::kCompileFailed) {
      EXPECT_EQ(t.config_key.rfind("reps=256", 0), 0u) << t.config_key;
      // The adaptive limit's floor: the quick ones finish in about a second each.
      EXPECT_EQ(t.error, "compile timed out after 30 s");
      timed_out = true;
    }
  EXPECT_TRUE(timed_out);
}

}  // namespace
}  // namespace ktune::test
