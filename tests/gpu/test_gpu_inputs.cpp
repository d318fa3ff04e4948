// GPU tests of inputs of one's own (docs/plugins.md, "Input data"): buffers filled from a .npy
// file, from a plugin's generator and from a named distribution reach the kernel on the device,
// and outputs are checked against an expected file. Right files verify every configuration; a
// wrong expected file verifies none and leaves no best. Each runs the real `ktune tune` on the
// examples/histogram plugin (built in-tree with ktune_add_kernel_plugin) and on the vecscale
// manifest. Without a CUDA device every test skips, saying why.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "common/npy_file.h"
#include "common/test_files.h"
#include "ktune/cuda_backend.h"
#include "ktune/store.h"
#include "tuner/cli_test_util.h"

namespace ktune::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class GpuInputs : public ::testing::Test {
 protected:
  void SetUp() override {
    const DeviceQuery q = list_devices();
    if (q.devices.empty()) GTEST_SKIP() << "no CUDA device: " << q.problem;
  }

  // `ktune tune ARGS --db inputs.db --json`: the summary, after checking the exit code.
  json tune(std::vector<std::string> args, int expected_code = 0) {
    args.insert(args.begin(), "tune");
    args.insert(args.end(), {"--db", (dir_ / "inputs.db").string(), "--json", "--samples", "5"});
    const CliResult r = run_ktune(args, dir_.path(), dir_ / "cache");
    EXPECT_EQ(r.code, expected_code) << r;
    if (r.code != 0) return json::object();
    return json::parse(r.out);
  }

  // Every trial of the summary verified (status ok), and there was at least one.
  static void expect_all_ok(const json& summary, const std::string& what) {
    ASSERT_TRUE(summary.contains("by_status")) << what << ": " << summary.dump();
    const json& by = summary["by_status"];
    EXPECT_GT(summary["trials"].get<int>(), 0) << what;
    EXPECT_EQ(by.value("ok", 0), summary["trials"].get<int>()) << what << ": " << by.dump();
    EXPECT_FALSE(summary["best"].is_null()) << what;
    // The GPU worker's start, timed step by step (docs/measuring.md, "Accounting").
    EXPECT_GT(summary.value("prepare_seconds", 0.0), 0.0) << what;
    const json phases = summary.value("prepare_phases_seconds", json::object());
    for (const char* step : {"device", "context", "host_inputs_reference", "upload_reference"})
      EXPECT_TRUE(phases.contains(step)) << what << ": no step " << step << " in " << phases.dump();
  }

  const std::string histogram_ = KTUNE_TEST_PLUGIN_HISTOGRAM;
  const std::string vecscale_ = std::string(KTUNE_TEST_DATA_DIR) + "/manifests/vecscale.toml";
  TempDir dir_;
};

TEST_F(GpuInputs, TheHistogramOfAFileMatchesItsExpectedFileInEveryConfiguration) {
  // text.toml: English text from a .npy file, its histogram from another.
  const std::string job = std::string(KTUNE_SOURCE_DIR) + "/examples/histogram/text.toml";
  expect_all_ok(tune({"--config", job, "--plugin", histogram_, "--budget-evals", "24"}), "text");

  // The same bytes against a histogram with one count off by one: no configuration verifies.
  std::string bad = read_bytes(std::string(KTUNE_TEST_DATA_DIR) + "/histogram/text_hist.npy");
  bad[bad.size() - 4 * 200] ^= 1;  // bin 56's count (uint32 little-endian)
  write_bytes(dir_ / "bad_hist.npy", bad);
  const CliResult r =
      run_ktune({"tune", "histogram", "--plugin", histogram_, "--problem", "n=16384", "--input",
                 "data=file(" + std::string(KTUNE_TEST_DATA_DIR) + "/histogram/text.npy)",
                 "--expected", "hist=file(" + (dir_ / "bad_hist.npy").string() + ")",
                 "--budget-evals", "8", "--db", (dir_ / "bad.db").string()},
                dir_.path(), dir_ / "cache");
  EXPECT_EQ(r.code, 1) << "no configuration verified: " << r;
  EXPECT_TRUE(contains(r.out, "8 wrong_result")) << r;
  const CliResult best =
      run_ktune({"best", "histogram", "--problem", "n=16384", "--db", (dir_ / "bad.db").string()},
                dir_.path(), dir_ / "cache");
  EXPECT_NE(best.code, 0) << "a wrong result is never a best: " << best;
}

TEST_F(GpuInputs, GeneratedAndDistributedBytesVerifyAgainstTheReference) {
  // The plugin's generator (its default input, and with an argument) and a Zipf distribution;
  // the reference function counts the same bytes on the host.
  expect_all_ok(
      tune({"histogram", "--plugin", histogram_, "--problem", "n=1000003", "--budget-evals", "16"}),
      "generator(0.5)");
  expect_all_ok(tune({"histogram", "--plugin", histogram_, "--problem", "n=1000003", "--input",
                      "data=generator(0.95)", "--budget-evals", "16"}),
                "generator(0.95)");
  expect_all_ok(tune({"histogram", "--plugin", histogram_, "--problem", "n=1000003", "--input",
                      "data=zipf(1.2,256)", "--budget-evals", "16"}),
                "zipf(1.2,256)");
}

TEST_F(GpuInputs, FloatInputAndExpectedOutputFromFilesWithinTolerance) {
  // vecscale computes out = 0.5 * in over 2n floats in either layout.
  const int n = 100003;
  std::vector<float> in(2 * n), out(2 * n);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  for (int i = 0; i < 2 * n; ++i) {
    in[i] = u(rng);
    out[i] = 0.5f * in[i];
  }
  write_npy(dir_ / "in.npy", "<f4", "(" + std::to_string(2 * n) + ",)", in.data(), in.size() * 4);
  write_npy(dir_ / "out.npy", "<f4", "(" + std::to_string(2 * n) + ",)", out.data(),
            out.size() * 4);
  const std::vector<std::string> common = {
      "vecscale", "--plugin",        vecscale_,        "--problem", "n=" + std::to_string(n),
      "--input",  "in=file(in.npy)", "--budget-evals", "12"};
  std::vector<std::string> good = common;
  good.insert(good.end(), {"--expected", "out=file(out.npy)"});
  expect_all_ok(tune(good), "vecscale with expected file");

  // One element off by far more than the tolerance: every configuration is wrong.
  out[n + 17] += 0.01f;
  write_npy(dir_ / "off.npy", "<f4", "(" + std::to_string(2 * n) + ",)", out.data(),
            out.size() * 4);
  std::vector<std::string> off = common;
  off.insert(off.begin(), "tune");
  off.insert(off.end(), {"--expected", "out=file(off.npy)", "--db", (dir_ / "off.db").string()});
  const CliResult r = run_ktune(off, dir_.path(), dir_ / "cache");
  EXPECT_EQ(r.code, 1) << "no configuration verified: " << r;
  EXPECT_TRUE(contains(r.out, "12 wrong_result")) << r;
  // Each trial's error names the element, its value and the expected one.
  const Store store = Store::open(dir_ / "off.db", Store::Mode::kReadOnly);
  const auto runs = store.runs();
  ASSERT_EQ(runs.size(), 1u);
  for (const TrialRecord& t : store.trials_of_run(runs[0].id)) {
    EXPECT_EQ(t.status, TrialStatus::kWrongResult) << t.config_key;
    EXPECT_TRUE(contains(t.error, "out[" + std::to_string(n + 17) + "]")) << t.error;
  }
}

TEST_F(GpuInputs, LargeInputsAndReferencesReachTheGpuWhole) {
  // copy at 3 * 2^24 + 5 floats: input and reference (192 MiB each) go up in page-locked slots
  // of 64 MiB, the last slot ragged. The device check compares with the uploaded reference, the
  // host check with the host's own copy of the input: a slot sent before it was filled, or
  // refilled before it had left, fails one or the other.
  for (const char* where : {"device", "host"})
    expect_all_ok(tune({"copy", "--problem", "n=50331653", "--budget-evals", "3", "--verify", where,
                        "--no-reuse"}),
                  std::string("copy, --verify ") + where);
}

TEST_F(GpuInputs, AConstantBufferReachesTheKernelsConstantVariable) {
  // constscale: out[i] = in[i] * coeff[i % 8], coeff = iota in constant memory; the expected
  // output is computed here, so a constant left unset (zeros) could not pass.
  const int n = 100003;
  std::vector<float> in(n), out(n);
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  for (int i = 0; i < n; ++i) {
    in[i] = u(rng);
    out[i] = in[i] * static_cast<float>(i % 8);
  }
  write_npy(dir_ / "cin.npy", "<f4", "(" + std::to_string(n) + ",)", in.data(), in.size() * 4);
  write_npy(dir_ / "cout.npy", "<f4", "(" + std::to_string(n) + ",)", out.data(), out.size() * 4);
  const std::string manifest = std::string(KTUNE_TEST_DATA_DIR) + "/manifests/constscale.toml";
  expect_all_ok(tune({"constscale", "--plugin", manifest, "--input", "in=file(cin.npy)",
                      "--expected", "out=file(cout.npy)", "--budget-evals", "4"}),
                "constscale");

  // 16 coefficients do not fit the kernel's 8: each configuration fails, saying so.
  const CliResult r = run_ktune({"tune", "constscale", "--plugin", manifest, "-p", "ncoeff=16",
                                 "--budget-evals", "2", "--db", (dir_ / "c16.db").string()},
                                dir_.path(), dir_ / "cache");
  EXPECT_NE(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out + r.err, "do not fit the kernel's __constant__ variable 'coeff'") ||
              contains(r.out, "launch_failed"))
      << r;
}

}  // namespace
}  // namespace ktune::test
