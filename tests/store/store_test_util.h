// Shared fixtures of the store tests: a temporary directory, file snapshots for the "left
// untouched" checks, and records with every field set to something distinctive.
#pragma once

#include <SQLiteCpp/Database.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>

#include "common/test_files.h"
#include "ktune/error.h"
#include "ktune/store.h"

namespace ktune::test {

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "ktune-store-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    db_path_ = dir_ / "results.db";
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  std::filesystem::path dir_;
  std::filesystem::path db_path_;
};

inline DeviceRecord h200(std::int64_t memory_bytes = 150'000'000'000) {
  DeviceRecord d;
  d.name = "NVIDIA H200";
  d.arch = "sm_90";
  d.cc_major = 9;
  d.cc_minor = 0;
  d.sm_count = 132;
  d.memory_bytes = memory_bytes;
  d.l2_bytes = 52'428'800;
  d.driver_version = 13000;
  d.nvrtc_version = "13.0";
  return d;
}

inline KernelRecord reduce_kernel(const std::string& source_hash = "src-1") {
  KernelRecord k;
  k.name = "reduce";
  k.source_hash = source_hash;
  k.space_hash = "space-1";
  k.source = "#define BLOCK_SIZE 256\n__global__ void reduce() {}\n";
  k.entry = "reduce<BLOCK_SIZE>";
  k.spec_json = R"({"parameters": {"block_size": [128, 256]}})";
  return k;
}

inline ProblemRecord problem_n(std::int64_t n, const std::string& kernel = "reduce") {
  ProblemRecord p;
  p.kernel_name = kernel;
  p.key = "n=" + std::to_string(n);
  p.json = "{\"n\": " + std::to_string(n) + "}";
  return p;
}

// A kernel, device, problem and run, registered.
struct Seeded {
  std::int64_t kernel = 0;
  std::int64_t device = 0;
  std::int64_t problem = 0;
  std::int64_t run = 0;
};

inline Seeded seed(Store& store, const DeviceRecord& device = h200(),
                   const KernelRecord& kernel = reduce_kernel(),
                   const ProblemRecord& problem = problem_n(1 << 20),
                   const Objective& objective = {}) {
  Seeded s;
  s.kernel = store.upsert_kernel(kernel);
  s.device = store.upsert_device(device);
  s.problem = store.upsert_problem(problem);
  RunRecord run;
  run.kernel_id = s.kernel;
  run.device_id = s.device;
  run.problem_id = s.problem;
  run.backend = "replay";
  run.strategy = "random";
  run.objective = objective.name;
  run.objective_higher_is_better = objective.higher_is_better;
  s.run = store.begin_run(run);
  return s;
}

inline TrialRecord make_trial(const Seeded& s, const std::string& key, double time_ms,
                              TrialStatus status = TrialStatus::kOk) {
  TrialRecord t;
  t.run_id = s.run;
  t.kernel_id = s.kernel;
  t.device_id = s.device;
  t.problem_id = s.problem;
  t.config_key = key;
  t.config_json = "{\"key\": \"" + key + "\"}";
  t.status = status;
  t.time_ms = time_ms;
  t.time_min_ms = time_ms;
  t.time_mean_ms = time_ms;
  t.time_spread = 0.01;
  t.sample_count = 1;
  t.samples_ms = {time_ms};
  t.arch = "sm_90";
  return t;
}

// Doubles compare equal when both are NaN: the store maps NaN to NULL and back.
inline bool same_double(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

inline void expect_same_trial(const TrialRecord& a, const TrialRecord& b) {
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.run_id, b.run_id);
  EXPECT_EQ(a.kernel_id, b.kernel_id);
  EXPECT_EQ(a.device_id, b.device_id);
  EXPECT_EQ(a.problem_id, b.problem_id);
  EXPECT_EQ(a.config_key, b.config_key);
  EXPECT_EQ(a.config_json, b.config_json);
  EXPECT_EQ(a.status, b.status);
  EXPECT_EQ(a.error, b.error);
  EXPECT_PRED2(same_double, a.time_ms, b.time_ms);
  EXPECT_PRED2(same_double, a.time_min_ms, b.time_min_ms);
  EXPECT_PRED2(same_double, a.time_mean_ms, b.time_mean_ms);
  EXPECT_PRED2(same_double, a.time_spread, b.time_spread);
  EXPECT_PRED2(same_double, a.objective, b.objective);
  EXPECT_EQ(a.sm_clock_mhz, b.sm_clock_mhz);
  EXPECT_EQ(a.temperature_c, b.temperature_c);
  EXPECT_EQ(a.sample_count, b.sample_count);
  ASSERT_EQ(a.samples_ms.size(), b.samples_ms.size());
  for (std::size_t i = 0; i < a.samples_ms.size(); ++i) {
    EXPECT_PRED2(same_double, a.samples_ms[i], b.samples_ms[i]) << "sample " << i;
  }
  EXPECT_PRED2(same_double, a.gbps, b.gbps);
  EXPECT_PRED2(same_double, a.gflops, b.gflops);
  EXPECT_EQ(a.registers, b.registers);
  EXPECT_EQ(a.local_bytes, b.local_bytes);
  EXPECT_EQ(a.spill_bytes, b.spill_bytes);
  EXPECT_EQ(a.static_shared_bytes, b.static_shared_bytes);
  EXPECT_EQ(a.dynamic_shared_bytes, b.dynamic_shared_bytes);
  EXPECT_EQ(a.max_threads_per_block, b.max_threads_per_block);
  EXPECT_PRED2(same_double, a.occupancy, b.occupancy);
  EXPECT_EQ(a.arch, b.arch);
  EXPECT_EQ(a.compile_options, b.compile_options);
  EXPECT_EQ(a.compile_log, b.compile_log);
  EXPECT_EQ(a.cubin_hash, b.cubin_hash);
  EXPECT_PRED2(same_double, a.compile_ms, b.compile_ms);
  EXPECT_PRED2(same_double, a.eval_ms, b.eval_ms);
  EXPECT_EQ(a.created_at, b.created_at);
}

// One value from ktune_meta, read through a separate plain SQLite connection.
inline std::string meta_value(const std::filesystem::path& path, const std::string& key) {
  SQLite::Database db(path.string(), SQLite::OPEN_READONLY);
  SQLite::Statement q(db, "SELECT value FROM ktune_meta WHERE key = ?");
  q.bind(1, key);
  return q.executeStep() ? q.getColumn(0).getString() : std::string("<missing>");
}

}  // namespace ktune::test
