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
  // transpose of 7001 x 7187 floats (a host reference): input and reference (192 MiB each) go up
  // in page-locked slots of 64 MiB, the last slot ragged. The device check compares with the
  // uploaded reference, the host check with the host's own: a slot sent before it was filled, or
  // refilled before it had left, fails one or the other. copy at 3 * 2^24 + 5 floats (its
  // reference a configuration): the input made on the GPU and the reference kept there with
  // --verify device, the input uploaded and the reference downloaded with --verify host.
  for (const char* where : {"device", "host"}) {
    expect_all_ok(tune({"transpose", "--problem", "rows=7001,cols=7187", "--budget-evals", "3",
                        "--verify", where, "--no-reuse"}),
                  std::string("transpose, --verify ") + where);
    expect_all_ok(tune({"copy", "--problem", "n=50331653", "--budget-evals", "3", "--verify", where,
                        "--no-reuse"}),
                  std::string("copy, --verify ") + where);
  }
}

TEST_F(GpuInputs, AReferenceKeptOnTheGpuStillCatchesAnElementLeftUnwritten) {
  // out = in with in all -1 (int32): every expected element equals the poison, so only the
  // second pattern catches the configurations that skip element 0. The reference is the
  // configuration skip=0, made and kept on the GPU (--verify device) or downloaded (host).
  write_file(dir_ / "poisonref.cu",
             "extern \"C\" __global__ void poisonref(const int* in, int* out, unsigned n) {\n"
             "  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
             "  if (i < n && !(SKIP && i == 0)) out[i] = in[i];\n"
             "}\n");
  write_file(dir_ / "poisonref.toml", R"toml([kernel]
name = "poisonref"
description = "out = in, the configurations with skip = 1 leave element 0 unwritten"
source = "poisonref.cu"
entry = "poisonref"

[[param]]
name = "skip"
values = [0, 1]

[[param]]
name = "block_size"
values = [128, 256]

[[problem]]
name = "n"
default = 100003

[launch]
grid = ["div_up(n, block_size)", 1, 1]
block = "block_size"

[[buffer]]
name = "in"
type = "int32"
role = "input"
size = "n"
init = "value(-1)"

[[buffer]]
name = "out"
type = "int32"
role = "output"
size = "n"

[[arg]]
buffer = "in"

[[arg]]
buffer = "out"

[[arg]]
value = "n"
type = "uint32"

[reference]
config = "skip=0,block_size=128"
)toml");
  for (const char* where : {"device", "host"}) {
    const json summary = tune({"poisonref", "--plugin", (dir_ / "poisonref.toml").string(),
                               "--strategy", "brute_force", "--verify", where, "--no-reuse"});
    ASSERT_TRUE(summary.contains("by_status")) << where << ": " << summary.dump();
    EXPECT_EQ(summary["by_status"].value("ok", 0), 2) << where << ": " << summary.dump();
    EXPECT_EQ(summary["by_status"].value("wrong_result", 0), 2) << where << ": " << summary.dump();
  }
  const Store store = Store::open(dir_ / "inputs.db", Store::Mode::kReadOnly);
  int wrong = 0;
  for (const auto& run : store.runs())
    for (const TrialRecord& t : store.trials_of_run(run.id))
      if (t.status == TrialStatus::kWrongResult) {
        ++wrong;
        EXPECT_TRUE(contains(t.config_key, "skip=1")) << t.config_key;
        EXPECT_TRUE(contains(t.error, "out[0]")) << t.error;
        EXPECT_TRUE(contains(t.error, "expected -1")) << t.error;
      }
  EXPECT_EQ(wrong, 4);
}

TEST_F(GpuInputs, AJobNeedNotKeepTheReferenceConfigurationsValues) {
  // copy narrowed to its one-pass variant of float4s: its reference (variant 0, single floats) is
  // a configuration of the kernel's declared space and still makes the reference.
  write_file(dir_ / "narrow.toml",
             "kernel = \"copy\"\n[problem]\nn = 1000003\n[space]\nvariant = [2]\n"
             "vector_width = [4]\nunroll = [2, 8]\n");
  for (const char* where : {"device", "host"})
    expect_all_ok(tune({"--config", (dir_ / "narrow.toml").string(), "--budget-evals", "4",
                        "--verify", where, "--no-reuse"}),
                  std::string("narrowed copy, --verify ") + where);
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
