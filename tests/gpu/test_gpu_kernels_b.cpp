// GPU tests of the built-in kernels from the lecture material, part b: every variant of
// convolution2d, stencil3d, soa_aos and streams verifies against its host reference at two
// problem sizes, one of them no multiple of any block or tile; the convolution also from a
// batched compilation (its run hook must find its own constant filter among the batch's), and
// soa_aos alternating layouts in one worker (buffers resized, reference recomputed). Without a
// CUDA device every test skips, saying why.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "ktune/cuda_backend.h"
#include "ktune/registry.h"

namespace ktune {
namespace {

using Assignments = std::map<std::string, std::string>;

class GpuKernelsB : public ::testing::Test {
 protected:
  void SetUp() override {
    const DeviceQuery q = list_devices();
    if (q.devices.empty()) GTEST_SKIP() << "no CUDA device: " << q.problem;
    register_builtin_kernels(registry_);
    cache_ = std::make_shared<CompileCache>(CompileCache::default_dir());
  }
  CudaBackend::Options options() const {
    CudaBackend::Options o;
    o.worker_command = {KTUNE_EXE, "__worker"};
    o.cache = cache_;
    return o;
  }
  // Compiles and evaluates each assignment (skipping invalid ones); returns how many ran.
  int verify_all(const std::string& kernel, const Problem& problem,
                 const std::vector<Assignments>& sets) {
    CudaBackend backend(options());
    KernelInstance instance(registry_.get(kernel), problem, backend.device().limits);
    MeasureOptions m;
    m.samples = 3;
    backend.prepare(instance, m);
    int checked = 0;
    for (const Assignments& a : sets) {
      const Config c = instance.space().from_assignments(a);
      const std::string key =
          kernel + "[" + instance.space().key(c) + "] " + instance.problem_key();
      if (!instance.space().is_valid(c)) {
        ADD_FAILURE() << key << " is not valid: " << instance.space().violated(c).value_or("");
        continue;
      }
      const CompileResult r =
          compile_cached(render(instance, c, backend.device().arch), cache_.get());
      if (!r.ok) {
        ADD_FAILURE() << key << ": " << r.error << "\n" << r.log;
        continue;
      }
      const Measurement meas = backend.evaluate(c, &r);
      EXPECT_EQ(meas.status, TrialStatus::kOk) << key << ": " << meas.error;
      EXPECT_GT(meas.time_ms, 0) << key;
      ++checked;
    }
    return checked;
  }

  Registry registry_;
  std::shared_ptr<CompileCache> cache_;
};

TEST_F(GpuKernelsB, ConvolutionEveryVariantAtTwoSizes) {
  std::vector<Assignments> sets;
  for (const char* shmem : {"0", "1"}) {
    for (const auto& [bx, by] : std::vector<std::pair<const char*, const char*>>{
             {"16", "4"}, {"32", "8"}, {"48", "2"}, {"256", "1"}}) {
      for (const auto& [tx, ty] :
           std::vector<std::pair<const char*, const char*>>{{"1", "1"}, {"3", "2"}, {"4", "4"}}) {
        sets.push_back({{"block_size_x", bx},
                        {"block_size_y", by},
                        {"tile_size_x", tx},
                        {"tile_size_y", ty},
                        {"use_shmem", shmem},
                        {"use_padding", "0"}});
        if (std::string(shmem) == "1" && std::string(bx) != "32" && std::string(bx) != "256")
          sets.push_back({{"block_size_x", bx},
                          {"block_size_y", by},
                          {"tile_size_x", tx},
                          {"tile_size_y", ty},
                          {"use_shmem", "1"},
                          {"use_padding", "1"}});
      }
    }
  }
  // Register blocking: adjacent rows per group, rolled or unrolled over the filter columns, with
  // and without padding (warps of 16 and 48 threads per row span rows kRr apart).
  for (const auto& [bx, by, tx, ty, rows, unroll, pad] :
       std::vector<std::tuple<const char*, const char*, const char*, const char*, const char*,
                              const char*, const char*>>{{"32", "8", "1", "1", "8", "0", "0"},
                                                         {"32", "4", "1", "1", "16", "1", "0"},
                                                         {"16", "4", "2", "1", "4", "0", "1"},
                                                         {"48", "2", "1", "2", "8", "1", "1"},
                                                         {"64", "2", "2", "2", "2", "0", "0"},
                                                         {"256", "1", "1", "4", "4", "1", "0"}}) {
    sets.push_back({{"block_size_x", bx},
                    {"block_size_y", by},
                    {"tile_size_x", tx},
                    {"tile_size_y", ty},
                    {"use_shmem", "1"},
                    {"use_padding", pad},
                    {"reg_rows", rows},
                    {"full_unroll", unroll}});
  }
  // 512 x 512 is a multiple of most tiles; 333 x 517 of none (and 7 is a second filter size).
  for (const Problem& p :
       {Problem{{"h", 512}, {"w", 512}, {"f", 15}}, Problem{{"h", 333}, {"w", 517}, {"f", 7}}}) {
    std::vector<Assignments> with_f = sets;
    for (auto& a : with_f) a["filter_size"] = std::to_string(p.at("f"));
    EXPECT_EQ(verify_all("convolution2d", p, with_f), static_cast<int>(sets.size()));
  }
}

// In a tuning run configurations are compiled in batches: one CUBIN, one namespace per
// configuration, and each configuration's hook must fill its own __constant__ filter.
TEST_F(GpuKernelsB, ConvolutionFromABatchedCompilation) {
  CudaBackend backend(options());
  KernelInstance instance(registry_.get("convolution2d"), {{"h", 300}, {"w", 401}, {"f", 7}},
                          backend.device().limits);
  MeasureOptions m;
  m.samples = 3;
  backend.prepare(instance, m);
  std::vector<Config> configs;
  for (const Assignments& a : std::vector<Assignments>{
           {{"block_size_x", "32"},
            {"block_size_y", "4"},
            {"tile_size_x", "1"},
            {"use_shmem", "0"}},
           {{"block_size_x", "32"},
            {"block_size_y", "4"},
            {"tile_size_x", "1"},
            {"use_shmem", "1"}},
           {{"block_size_x", "48"},
            {"block_size_y", "4"},
            {"tile_size_x", "2"},
            {"use_shmem", "1"},
            {"use_padding", "1"}},
           {{"block_size_x", "16"},
            {"block_size_y", "16"},
            {"tile_size_y", "3"},
            {"use_shmem", "0"}},
           {{"block_size_x", "128"},
            {"block_size_y", "2"},
            {"tile_size_x", "4"},
            {"use_shmem", "1"}},
           {{"block_size_x", "32"}, {"block_size_y", "4"}, {"use_shmem", "1"}, {"reg_rows", "8"}},
           {{"block_size_x", "32"},
            {"block_size_y", "4"},
            {"use_shmem", "1"},
            {"reg_rows", "4"},
            {"full_unroll", "1"}},
       }) {
    Assignments with_f = a;
    with_f["filter_size"] = "7";
    configs.push_back(instance.space().from_assignments(with_f));
    ASSERT_TRUE(instance.space().is_valid(configs.back())) << instance.space().key(configs.back());
  }
  std::vector<CompileRequest> requests;
  for (const Config& c : configs) requests.push_back(render(instance, c, backend.device().arch));
  const std::vector<CompileResult> results = compile_batch(requests);
  ASSERT_EQ(results.size(), configs.size());
  ASSERT_EQ(results.front().cubin, results.back().cubin)
      << "the batch fell back to single compilations";
  // Twice over, in opposite orders: each run must upload into its own configuration's filter.
  for (int round = 0; round < 2; ++round) {
    for (std::size_t k = 0; k < configs.size(); ++k) {
      const std::size_t i = round == 0 ? k : configs.size() - 1 - k;
      ASSERT_TRUE(results[i].ok) << results[i].error;
      const Measurement meas = backend.evaluate(configs[i], &results[i]);
      EXPECT_EQ(meas.status, TrialStatus::kOk)
          << instance.space().key(configs[i]) << ": " << meas.error;
    }
  }
}

TEST_F(GpuKernelsB, StencilEveryVariantAtTwoSizes) {
  std::vector<Assignments> sets;
  for (const char* variant : {"naive", "registers", "shared", "vector"}) {
    for (const auto& [bx, by] : std::vector<std::pair<const char*, const char*>>{
             {"32", "1"}, {"32", "16"}, {"64", "4"}, {"256", "4"}}) {
      for (const char* chunk : {"16", "64"}) {
        sets.push_back(
            {{"variant", variant}, {"block_size_x", bx}, {"block_size_y", by}, {"z_chunk", chunk}});
      }
    }
  }
  // The short chunks, which do not divide nz = 39.
  for (const char* variant : {"registers", "shared", "vector"})
    for (const char* chunk : {"4", "8"})
      sets.push_back({{"variant", variant},
                      {"block_size_x", "64"},
                      {"block_size_y", "4"},
                      {"z_chunk", chunk}});
  // vector without and under a register cap, with 64- and 32-bit offsets.
  for (const char* regs : {"0", "40"})
    for (const char* offsets : {"64", "32"})
      sets.push_back({{"variant", "vector"},
                      {"maxrregcount", regs},
                      {"offsets", offsets},
                      {"block_size_x", "64"},
                      {"block_size_y", "4"},
                      {"z_chunk", "4"}});
  EXPECT_EQ(verify_all("stencil3d", {{"nx", 128}, {"ny", 64}, {"nz", 64}}, sets),
            static_cast<int>(sets.size()));
  EXPECT_EQ(verify_all("stencil3d", {{"nx", 77}, {"ny", 45}, {"nz", 39}}, sets),
            static_cast<int>(sets.size()));
}

TEST_F(GpuKernelsB, SoaAosEveryLayoutAtTwoSizesInOneWorker) {
  // Layouts alternate, so the worker resizes the buffers and recomputes the reference in between.
  std::vector<Assignments> sets;
  for (const char* ept : {"1", "4"}) {
    for (const char* bs : {"64", "256", "1024"}) {
      sets.push_back({{"layout", "aos"},
                      {"use_shmem", "0"},
                      {"block_size", bs},
                      {"elements_per_thread", ept}});
      sets.push_back({{"layout", "soa"},
                      {"use_shmem", "0"},
                      {"block_size", bs},
                      {"elements_per_thread", ept}});
      if (std::string(bs) != "1024" || std::string(ept) == "1")
        sets.push_back({{"layout", "aos"},
                        {"use_shmem", "1"},
                        {"block_size", bs},
                        {"elements_per_thread", ept}});
    }
  }
  EXPECT_EQ(verify_all("soa_aos", {{"n", 1 << 20}}, sets), static_cast<int>(sets.size()));
  EXPECT_EQ(verify_all("soa_aos", {{"n", 1000003}}, sets), static_cast<int>(sets.size()));
}

TEST_F(GpuKernelsB, StreamsEveryPipelineShapeAtTwoSizes) {
  std::vector<Assignments> sets = {{{"chunks", "1"}, {"streams", "1"}, {"breadth_first", "0"}}};
  for (const char* chunks : {"2", "8", "64"}) {
    for (const char* streams : {"1", "2", "3", "8"}) {
      if (std::stoi(streams) > std::stoi(chunks)) continue;
      sets.push_back({{"chunks", chunks},
                      {"streams", streams},
                      {"breadth_first", "0"},
                      {"block_size", "256"}});
      if (std::string(streams) != "1")
        sets.push_back({{"chunks", chunks},
                        {"streams", streams},
                        {"breadth_first", "1"},
                        {"block_size", "1024"}});
    }
  }
  // 1000003 is prime: every chunk but the last is whole kilobytes, the last is ragged; at
  // 64 chunks of 2^20 / 64 values some streams get more chunks than others.
  EXPECT_EQ(verify_all("streams", {{"n", 1 << 20}}, sets), static_cast<int>(sets.size()));
  EXPECT_EQ(verify_all("streams", {{"n", 1000003}}, sets), static_cast<int>(sets.size()));
}

}  // namespace
}  // namespace ktune
