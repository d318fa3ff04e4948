// Shared fixtures of the client tests: a temporary directory, a results database written with
// ktune::Store (devices, kernel versions, problems, runs, trials, bests, binaries), the real
// built-in reduce kernel for rendering, and error expectations.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <string>

#include "common/test_files.h"
#include "ktune/client.h"
#include "ktune/error.h"
#include "ktune/store.h"

namespace ktune::test {

inline DeviceRecord device(const std::string& name, const std::string& arch, int sm_count,
                           std::int64_t memory_bytes) {
  DeviceRecord d;
  d.name = name;
  d.arch = arch;
  const int cc = std::stoi(arch.substr(3));  // "sm_90" -> 90, "sm_100" -> 100
  d.cc_major = cc / 10;
  d.cc_minor = cc % 10;
  d.sm_count = sm_count;
  d.memory_bytes = memory_bytes;
  d.l2_bytes = 50 << 20;
  d.driver_version = 13000;
  d.nvrtc_version = "13.0";
  return d;
}

// The devices of the tests, by the names the client sees.
inline DeviceRecord h200() { return device("NVIDIA H200", "sm_90", 132, 150'000'000'000); }
inline DeviceRecord h100_sxm() {
  return device("NVIDIA H100 80GB HBM3", "sm_90", 132, 85'000'000'000);
}
inline DeviceRecord h100_pcie() { return device("NVIDIA H100 PCIe", "sm_90", 114, 85'000'000'000); }
inline DeviceRecord a100() { return device("NVIDIA A100-SXM4-80GB", "sm_80", 108, 85'000'000'000); }
inline DeviceRecord a40() { return device("NVIDIA A40", "sm_86", 84, 48'000'000'000); }
inline DeviceRecord rtx4090() {
  return device("NVIDIA GeForce RTX 4090", "sm_89", 128, 25'000'000'000);
}

inline ClientDevice client_device(const DeviceRecord& d) {
  return ClientDevice::describe(d.name, d.arch, d.sm_count, d.memory_bytes);
}

// A reduce-like kernel version with the spec_json the tuner writes (kernel_record,
// tuner/loop/records.cpp).
inline KernelRecord reduce_record(
    const std::string& source_hash = "src-1",
    const std::string& problem_json = R"([{"name": "n", "default": 16777216}])") {
  KernelRecord k;
  k.name = "reduce";
  k.source_hash = source_hash;
  k.space_hash = "space-1";
  k.source = "__global__ void reduce() {}\n";
  k.entry = "reduce<BLOCK_SIZE, VARIANT, ELEMENTS_PER_THREAD, int>";
  k.spec_json =
      R"json({"parameters": [)json"
      R"json({"name": "block_size", "values": ["64", "128", "256", "512"], "default": "256"}, )json"
      R"json({"name": "variant", "values": ["7", "8", "9"], "default": "9"}, )json"
      R"json({"name": "elements_per_thread", "values": ["2", "4", "8"], "default": "8"}], )json"
      R"json("problem": )json" +
      problem_json +
      R"json(, )json"
      R"json("grid": ["div_up(n, block_size * elements_per_thread)", "1", "1"], )json"
      R"json("block": ["block_size", "1", "1"], "shared_mem": "max(block_size, 64) * 4", )json"
      R"json("compile_options": ["-std=c++17"]})json";
  return k;
}

inline std::string problem_key(const Problem& p) {
  std::string key;
  for (const auto& [name, value] : p)
    key += (key.empty() ? "" : ",") + name + "=" + std::to_string(value);
  return key;
}

inline std::string problem_json(const Problem& p) {
  std::string json = "{";
  for (const auto& [name, value] : p)
    json += (json.size() > 1 ? ", \"" : "\"") + name + "\": " + std::to_string(value);
  return json + "}";
}

// What a best row is made of.
struct BestSpec {
  std::int64_t kernel_id = 0;
  DeviceRecord device;
  Problem problem;
  std::string config_json = R"({"block_size": 256, "variant": 9, "elements_per_thread": 8})";
  std::string config_key = "block_size=256,variant=9,elements_per_thread=8";
  double time_ms = 0.05;
  std::string binary_key;                                 // trial.cubin_hash
  std::string arch;                                       // trial.arch; the device's when empty
  bool replayed = false;                                  // a run of the replay backend
  std::string strategy = "brute_force", strategy_chosen;  // the run's
  Objective objective;                                    // the run's; its value of it:
  double objective_value = std::numeric_limits<double>::quiet_NaN();
  double energy_j = std::numeric_limits<double>::quiet_NaN();  // the trial's, with its power
};

// Registers everything a best needs and returns the best trial's id.
inline std::int64_t add_best(Store& store, const BestSpec& b) {
  const std::int64_t device_id = store.upsert_device(b.device);
  ProblemRecord p;
  p.kernel_name = store.kernel(b.kernel_id)->name;
  p.key = problem_key(b.problem);
  p.json = problem_json(b.problem);
  const std::int64_t problem_id = store.upsert_problem(p);
  RunRecord run;
  run.kernel_id = b.kernel_id;
  run.device_id = device_id;
  run.problem_id = problem_id;
  run.backend = b.replayed ? "replay" : "cuda";
  run.replayed = b.replayed;
  run.strategy = b.strategy;
  run.strategy_chosen = b.strategy_chosen;
  run.objective = b.objective.name;
  run.objective_higher_is_better = b.objective.higher_is_better;
  run.host = "test-host";
  run.ktune_version = "0.1.0";
  run.nvrtc_version = "13.0";
  const std::int64_t run_id = store.begin_run(run);
  TrialRecord t;
  t.run_id = run_id;
  t.kernel_id = b.kernel_id;
  t.device_id = device_id;
  t.problem_id = problem_id;
  t.config_key = b.config_key;
  t.config_json = b.config_json;
  t.status = TrialStatus::kOk;
  t.time_ms = b.time_ms;
  t.time_min_ms = b.time_ms * 0.98;
  t.time_mean_ms = b.time_ms * 1.01;
  t.time_spread = 0.02;
  t.sample_count = 30;
  t.samples_ms = {b.time_ms};
  t.gbps = 1000;
  t.gflops = std::numeric_limits<double>::quiet_NaN();  // not declared: NULL, read back as NaN
  t.arch = b.arch.empty() ? b.device.arch : b.arch;
  t.compile_options = "-std=c++17 --gpu-architecture=" + t.arch;
  t.cubin_hash = b.binary_key;
  t.objective = b.objective_value;
  t.energy_j = b.energy_j;
  t.power_w = b.energy_j / (b.time_ms * 1e-3);
  const std::int64_t trial_id = store.add_trial(t);
  store.set_best(trial_id, b.objective);
  store.finish_run(run_id, RunStatus::kFinished, "{}");
  return trial_id;
}

class ClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "ktune-client-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    db_path_ = dir_ / "results.db";
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::permissions(db_path_, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(dir_, ec);
  }

  std::filesystem::path dir_;
  std::filesystem::path db_path_;
};

}  // namespace ktune::test
