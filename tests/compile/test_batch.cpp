// Batched compilation: several configurations of one template in one NVRTC program, each in
// its own namespace; failures fall back to single compilations so errors stay per config.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "common/compile_request.h"
#include "ktune/compiler.h"

namespace ktune {
namespace {

constexpr const char* kBody = R"(
#if BAD == 1
#error bad configuration
#endif
template <int B, int U>
__global__ void KTUNE_LAUNCH_BOUNDS k(float* out) {
  __shared__ float s[B];
  s[threadIdx.x] = threadIdx.x * U;
  __syncthreads();
  out[blockIdx.x * B + threadIdx.x] = s[B - 1 - threadIdx.x];
}
)";

CompileRequest request(int block, int unroll, int bad, const std::string& group = "g") {
  return test::assembled_request(
      {{"BLOCK", std::to_string(block)},
       {"UNROLL", std::to_string(unroll)},
       {"BAD", std::to_string(bad)},
       {"KTUNE_LAUNCH_BOUNDS",
        block >= 256 ? "__launch_bounds__(" + std::to_string(block) + ", 1)" : ""}},
      std::string("#line 1 \"k.cu\"\n") + kBody, "k<BLOCK, UNROLL>", "sm_90", group);
}

TEST(CompileBatch, OneProgramGivesEveryConfigItsOwnEntry) {
  std::vector<CompileRequest> requests = {request(64, 1, 0), request(128, 2, 0),
                                          request(256, 4, 0)};
  const auto results = compile_batch(requests);
  ASSERT_EQ(results.size(), 3u);
  std::set<std::string> names;
  for (std::size_t i = 0; i < results.size(); ++i) {
    ASSERT_TRUE(results[i].ok) << results[i].error << results[i].log;
    EXPECT_NE(results[i].lowered_name.find("ktune_cfg_" + std::to_string(i)), std::string::npos)
        << results[i].lowered_name;
    EXPECT_EQ(results[i].key, requests[i].key());
    EXPECT_EQ(results[i].cubin, results[0].cubin);  // one CUBIN holds them all
    names.insert(results[i].lowered_name);
  }
  EXPECT_EQ(names.size(), 3u);
  // Resources are those of each config's own entry: the shared array grows with the block.
  EXPECT_EQ(results[0].resources.static_shared_bytes, 64 * 4);
  EXPECT_EQ(results[1].resources.static_shared_bytes, 128 * 4);
  EXPECT_EQ(results[2].resources.static_shared_bytes, 256 * 4);
}

TEST(CompileBatch, AFailingConfigFallsBackToSingleCompilations) {
  const auto results = compile_batch({request(64, 1, 0), request(128, 1, 1), request(256, 1, 0)});
  ASSERT_EQ(results.size(), 3u);
  EXPECT_TRUE(results[0].ok);
  EXPECT_FALSE(results[1].ok);
  EXPECT_NE(results[1].log.find("bad configuration"), std::string::npos);
  EXPECT_TRUE(results[2].ok);
  EXPECT_EQ(results[0].lowered_name.find("ktune_cfg_"), std::string::npos);  // compiled alone
}

TEST(CompileBatch, PoolBatchesQueuedRequestsAndKeepsResultsPerConfig) {
  CompilePool pool(2, nullptr);
  std::vector<std::shared_future<CompileResult>> futures;
  std::vector<CompileRequest> requests;
  for (int b : {32, 64, 128, 256, 512})
    for (int u : {1, 2, 3, 4}) requests.push_back(request(b, u, 0));
  for (const auto& r : requests) futures.push_back(pool.submit(r));
  int batched = 0;
  for (std::size_t i = 0; i < futures.size(); ++i) {
    const CompileResult& r = futures[i].get();
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.key, requests[i].key());
    batched += r.lowered_name.find("ktune_cfg_") != std::string::npos;
  }
  EXPECT_EQ(pool.compiles(), requests.size());
  EXPECT_GT(batched, 0);
}

// A group submitted at once is shared out fairly: the first thread to start takes its share of
// the thirty over three threads, ten, in one NVRTC program, and every configuration comes back
// under its own key, each compiled once.
TEST(CompileBatch, AGroupSubmittedAtOnceIsSharedOutFairly) {
  CompilePool pool(3, nullptr);
  std::mutex mutex;
  std::map<std::size_t, std::vector<std::size_t>> taken;  // per thread, in the order taken
  pool.set_observer([&](const CompileBatchRecord& r) {
    std::lock_guard lock(mutex);
    taken[r.thread].push_back(r.requests);
  });
  std::vector<CompileRequest> requests;
  for (int b : {32, 64, 128, 256, 512})
    for (int u : {1, 2, 3, 4, 5, 6}) requests.push_back(request(b, u, 0));
  const std::vector<std::shared_future<CompileResult>> futures = pool.submit(requests);
  ASSERT_EQ(futures.size(), requests.size());
  for (std::size_t i = 0; i < futures.size(); ++i) {
    EXPECT_TRUE(futures[i].get().ok) << futures[i].get().error;
    EXPECT_EQ(futures[i].get().key, requests[i].key());
  }
  pool.set_observer({});
  std::size_t total = 0, largest_first = 0;
  for (const auto& [thread, sizes] : taken) {
    ASSERT_FALSE(sizes.empty());
    largest_first = std::max(largest_first, sizes.front());
    for (std::size_t n : sizes) total += n;
  }
  EXPECT_EQ(largest_first, 10u);
  EXPECT_EQ(total, 30u);
  EXPECT_EQ(pool.compiles(), 30u);
}

TEST(CompileBatch, DifferentGroupsAreNeverMixed) {
  const auto results = compile_batch({request(64, 1, 0, "a"), request(128, 1, 0, "b")});
  ASSERT_EQ(results.size(), 2u);
  for (const auto& r : results) {
    EXPECT_TRUE(r.ok);
    EXPECT_EQ(r.lowered_name.find("ktune_cfg_"), std::string::npos);
  }
}

}  // namespace
}  // namespace ktune
