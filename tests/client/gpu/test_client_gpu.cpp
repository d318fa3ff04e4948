// GPU tests of the client: a best of the real reduce kernel, stored as the tuner stores it
// (records, trial key, winner's CUBIN), is looked up, loaded from the stored binary or compiled
// with NVRTC, and launched level by level as reduce's run hook does; the sum must be exact.
// Without a CUDA device every test skips, saying why.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "ktune/client.h"
#include "ktune/device.h"
#include "ktune/error.h"
#include "ktune/registry.h"
#include "ktune/store.h"
#include "ktune/tuner.h"

namespace ktune {
namespace {

namespace fs = std::filesystem;

std::int64_t div_up(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// n random int32 values on the GPU, their exact (wrap-around) sum, and the scratch a
// multi-level reduction needs.
class Input {
 public:
  Input(std::int64_t n, std::int64_t tile) : n_(n) {
    std::mt19937 rng(static_cast<unsigned>(n));
    std::uniform_int_distribution<std::int32_t> dist(-100, 100);
    std::vector<std::int32_t> host(static_cast<std::size_t>(n));
    std::uint32_t sum = 0;
    for (auto& x : host) {
      x = dist(rng);
      sum += static_cast<std::uint32_t>(x);
    }
    expected_ = static_cast<std::int32_t>(sum);
    partial_count_ = static_cast<std::size_t>(div_up(n, tile) + div_up(div_up(n, tile), tile) + 4);
    cudaMalloc(reinterpret_cast<void**>(&in_), host.size() * sizeof(std::int32_t));
    cudaMalloc(reinterpret_cast<void**>(&partial_), partial_count_ * sizeof(std::int32_t));
    cudaMalloc(reinterpret_cast<void**>(&out_), sizeof(std::int32_t));
    cudaMemcpy(in_, host.data(), host.size() * sizeof(std::int32_t), cudaMemcpyHostToDevice);
  }
  ~Input() {
    cudaFree(in_);
    cudaFree(partial_);
    cudaFree(out_);
  }
  std::int64_t n() const { return n_; }
  std::int32_t expected() const { return expected_; }

  // One launch per level, until one block writes the result (plugins/builtin/reduce.cpp's run
  // hook): partial sums alternate between two halves of the scratch buffer.
  std::int32_t sum(const LoadedKernel& kernel) {
    const std::int64_t tile =
        kernel.best().value("block_size") * kernel.best().value("elements_per_thread");
    const std::int64_t second = (div_up(n_, tile) + 3) / 4 * 4;  // 16-byte aligned
    std::int32_t* halves[2] = {partial_, partial_ + second};
    const void* src = in_;
    std::int64_t n = n_;
    cudaMemset(out_, 0xff, sizeof(std::int32_t));
    // Step 10: one launch, its last block writing out_; partial_ is its scratch.
    const bool one_pass = kernel.best().value("variant") == 10;
    void* scratch = partial_;
    for (int level = 0;; ++level) {
      const LaunchShape shape = kernel.shape({{"n", n}});
      void* dst = shape.grid[0] == 1 || one_pass ? out_ : halves[level % 2];
      unsigned n_arg = static_cast<unsigned>(n);
      void* args[] = {&src, &dst, &n_arg, &scratch};
      kernel.launch(shape, args);
      if (shape.grid[0] == 1 || one_pass) break;
      src = dst;
      n = shape.grid[0];
    }
    std::int32_t result = 0;
    const cudaError_t e = cudaMemcpy(&result, out_, sizeof(result), cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) throw Error(ErrorKind::kDevice, cudaGetErrorString(e));
    return result;
  }

 private:
  std::int64_t n_;
  std::int32_t expected_ = 0;
  std::size_t partial_count_ = 0;
  std::int32_t* in_ = nullptr;
  std::int32_t* partial_ = nullptr;
  std::int32_t* out_ = nullptr;
};

class ClientGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string problem;
    if (!ClientDevice::find_current(0, &problem)) GTEST_SKIP() << "no CUDA device: " << problem;
    info_ = require_device(0);
    register_builtin_kernels(registry_);
    std::string pattern = (fs::temp_directory_path() / "ktune-client-gpu-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    db_ = dir_ / "results.db";
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  // Stores `assignments` of reduce as the best for this GPU at n, as the tuner does; with
  // `keep_binary` also the winner's CUBIN.
  void store_best(const std::map<std::string, std::string>& assignments, std::int64_t n,
                  bool keep_binary) {
    KernelInstance instance(registry_.get("reduce"), {{"n", n}}, info_.limits);
    const Config config = instance.space().from_assignments(assignments);
    ASSERT_TRUE(instance.space().is_valid(config)) << instance.space().key(config);
    const CompileResult c = compile(render(instance, config, info_.arch));
    ASSERT_TRUE(c.ok) << c.error << "\n" << c.log;
    Store store = Store::open(db_);
    const std::int64_t device = store.upsert_device(device_record(info_));
    const std::int64_t kernel = store.upsert_kernel(kernel_record(instance));
    ProblemRecord p;
    p.kernel_name = "reduce";
    p.key = instance.problem_key();
    p.json = nlohmann::json(instance.problem()).dump();
    const std::int64_t problem = store.upsert_problem(p);
    RunRecord run;
    run.kernel_id = kernel;
    run.device_id = device;
    run.problem_id = problem;
    run.backend = "cuda";
    run.strategy = "test";
    const std::int64_t run_id = store.begin_run(run);
    TrialRecord t;
    t.run_id = run_id;
    t.kernel_id = kernel;
    t.device_id = device;
    t.problem_id = problem;
    t.config_key = instance.space().key(config);
    nlohmann::json cj;
    for (std::size_t i = 0; i < instance.space().size(); ++i)
      cj[instance.space().params()[i].name] = instance.space().value(config, i).as_int();
    t.config_json = cj.dump();
    t.time_ms = 0.1;
    t.sample_count = 1;
    t.samples_ms = {0.1};
    t.arch = info_.arch;
    t.cubin_hash = c.key;
    store.set_best(store.add_trial(t));
    if (keep_binary) store.put_binary(c.key, c.arch, c.lowered_name, c.cubin);
  }

  DeviceInfo info_;
  Registry registry_;
  fs::path dir_;
  fs::path db_;
};

TEST_F(ClientGpu, StoredBinaryLoadsWithoutNvrtcAndSums) {
  store_best(
      {{"block_size", "256"}, {"variant", "9"}, {"elements_per_thread", "8"}, {"unroll", "4"}},
      1 << 22, true);
  Client client(db_);  // the current device
  EXPECT_EQ(client.device().name, info_.name);
  const LookupResult r = client.best("reduce", {{"n", 1 << 22}});
  ASSERT_TRUE(r) << r.message;
  EXPECT_EQ(r->device_match, DeviceMatch::kExactDevice);
  EXPECT_EQ(r->problem_match, ProblemMatch::kExact);
  const auto kernel = client.load(*r);
  EXPECT_EQ(kernel->origin(), KernelOrigin::kStoredBinary);
  EXPECT_GT(kernel->load_ms(), 0);
  EXPECT_NE(kernel->handle(), nullptr);
  Input input(1 << 22, 256 * 8);
  EXPECT_EQ(input.sum(*kernel), input.expected());
  // A size no tile divides: the nearest tuned problem's configuration, launched for this n.
  const LookupResult near = client.best("reduce", {{"n", 3000017}});
  ASSERT_TRUE(near);
  EXPECT_EQ(near->problem_match, ProblemMatch::kNearest);
  Input odd(3000017, 256 * 8);
  EXPECT_EQ(odd.sum(*client.load(*near)), odd.expected());
}

// A stored one-pass best (step 10) sums in one launch from the client too, launch after launch
// (its block counter wraps back to 0), at a size its tiles divide and at one they do not.
TEST_F(ClientGpu, OnePassBestSumsLaunchAfterLaunch) {
  store_best({{"block_size", "256"},
              {"variant", "10"},
              {"elements_per_thread", "16"},
              {"unroll", "2"},
              {"blocks_per_sm", "4"}},
             1 << 22, true);
  Client client(db_);
  const LookupResult r = client.best("reduce", {{"n", 1 << 22}});
  ASSERT_TRUE(r) << r.message;
  const auto kernel = client.load(*r);
  EXPECT_EQ(kernel->best().value("variant"), 10);
  Input input(1 << 22, 256 * 16);
  for (int again = 0; again < 3; ++again) EXPECT_EQ(input.sum(*kernel), input.expected()) << again;
  Input odd(3000017, 256 * 16);
  for (int again = 0; again < 3; ++again) EXPECT_EQ(odd.sum(*kernel), odd.expected()) << again;
}

TEST_F(ClientGpu, NvrtcWhenTheDatabaseKeepsNoBinaryThenMemoryThenDiskCache) {
  store_best({{"block_size", "128"},
              {"variant", "7"},
              {"elements_per_thread", "16"},
              {"launch_bounds", "2"},
              {"maxrregcount", "64"}},
             1 << 20, false);
  ClientOptions o;
  o.cache_dir = dir_ / "cubins";
  {
    Client client(db_, o);
    const LookupResult r = client.best("reduce", {{"n", 1 << 20}});
    ASSERT_TRUE(r) << r.message;
    const auto kernel = client.load(*r);
    EXPECT_EQ(kernel->origin(), KernelOrigin::kCompiled);
    EXPECT_EQ(kernel->binary().reason, "the database keeps no binary of the winner");
    EXPECT_EQ(kernel->binary().key, r->provenance.binary_key) << "rendered as the tuner did";
    EXPECT_EQ(client.load(*r).get(), kernel.get()) << "loaded once";
    Input input(1 << 20, 128 * 16);
    EXPECT_EQ(input.sum(*kernel), input.expected());
  }
  Client again(db_, o);
  const auto kernel = again.load(*again.best("reduce", {{"n", 1 << 20}}));
  EXPECT_EQ(kernel->origin(), KernelOrigin::kDiskCache);
  Input input(123457, 128 * 16);
  EXPECT_EQ(input.sum(*kernel), input.expected());
}

TEST_F(ClientGpu, EveryVariantLoadsAndSums) {
  const std::vector<std::map<std::string, std::string>> configs = {
      {{"block_size", "256"}, {"variant", "1"}, {"elements_per_thread", "1"}},
      {{"block_size", "64"}, {"variant", "3"}, {"elements_per_thread", "1"}},
      {{"block_size", "512"}, {"variant", "5"}, {"elements_per_thread", "2"}},
      {{"block_size", "1024"}, {"variant", "6"}, {"elements_per_thread", "2"}},
      {{"block_size", "32"}, {"variant", "8"}, {"elements_per_thread", "4"}, {"unroll", "2"}},
      {{"block_size", "128"}, {"variant", "9"}, {"elements_per_thread", "2"}},
  };
  for (const auto& assignments : configs) {
    std::error_code ec;
    fs::remove(db_, ec);
    store_best(assignments, 1 << 21, true);
    Client client(db_);
    const LookupResult r = client.best("reduce", {{"n", 1 << 21}});
    ASSERT_TRUE(r) << r.message;
    const auto kernel = client.load(*r);
    EXPECT_EQ(kernel->origin(), KernelOrigin::kStoredBinary);
    Input input((1 << 21) + 3, r->value("block_size") * r->value("elements_per_thread"));
    EXPECT_EQ(input.sum(*kernel), input.expected()) << r->config_key;
  }
}

TEST_F(ClientGpu, ALaunchFailureIsAnError) {
  store_best({{"block_size", "256"}, {"variant", "9"}, {"elements_per_thread", "8"}}, 1 << 20,
             true);
  Client client(db_);
  const auto kernel = client.load(*client.best("reduce", {{"n", 1 << 20}}));
  LaunchShape bad;
  bad.block = {4096, 1, 1};  // more threads than any GPU allows in a block
  void* null = nullptr;
  unsigned n = 1;
  void* args[] = {&null, &null, &n, &null};
  try {
    kernel->launch(bad, args);
    ADD_FAILURE() << "expected Error(kDevice)";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kDevice);
    EXPECT_NE(std::string(e.what()).find("reduce[block_size=256,"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("launch failed"), std::string::npos) << e.what();
  }
  cudaGetLastError();  // clear the launch error
}

}  // namespace
}  // namespace ktune
