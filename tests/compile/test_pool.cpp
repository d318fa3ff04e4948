// CompilePool: many distinct requests, in-flight deduplication, the cache path, shutdown.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "compile/compile_test_util.h"
#include "ktune/compiler.h"

namespace ktune {
namespace {

using test::reduce_lowered_name;
using test::reduce_request;

class PoolTest : public test::TempDirTest {};

TEST_F(PoolTest, ManyDistinctRequests) {
  CompilePool pool(2, nullptr);
  EXPECT_EQ(pool.threads(), 2u);
  std::vector<int> sizes = {32, 64, 96, 128, 160, 192, 256, 512};
  std::vector<std::shared_future<CompileResult>> futures;
  for (int size : sizes) futures.push_back(pool.submit(reduce_request(size)));
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const CompileResult& result = futures[i].get();
    ASSERT_TRUE(result.ok) << result.error;
    EXPECT_EQ(result.lowered_name, reduce_lowered_name(sizes[i]));
    EXPECT_EQ(result.resources.static_shared_bytes, sizes[i] * 4);
    EXPECT_EQ(result.key, reduce_request(sizes[i]).key());
    EXPECT_FALSE(result.from_cache);
  }
  EXPECT_EQ(pool.compiles(), sizes.size());
  EXPECT_GT(pool.busy_seconds(), 0);
}

TEST_F(PoolTest, DuplicatesInFlightCompileOnce) {
  CompilePool pool(1, nullptr);
  // With one thread, the duplicates queue behind the first request and are all in flight.
  std::shared_future<CompileResult> first = pool.submit(reduce_request(32));
  std::vector<std::shared_future<CompileResult>> duplicates;
  for (int i = 0; i < 6; ++i) duplicates.push_back(pool.submit(reduce_request(128)));
  ASSERT_TRUE(first.get().ok);
  for (auto& future : duplicates) {
    ASSERT_TRUE(future.get().ok);
    EXPECT_EQ(&future.get(), &duplicates[0].get());  // one shared state
  }
  EXPECT_EQ(pool.compiles(), 2u);
}

TEST_F(PoolTest, ResultsFlowThroughTheCache) {
  auto cache = std::make_shared<CompileCache>(dir_ / "cache");
  std::vector<int> sizes = {32, 64, 128, 256};
  {
    CompilePool pool(2, cache);
    std::vector<std::shared_future<CompileResult>> futures;
    for (int size : sizes) futures.push_back(pool.submit(reduce_request(size)));
    for (auto& future : futures) EXPECT_FALSE(future.get().from_cache);
    EXPECT_EQ(pool.compiles(), sizes.size());
  }
  CompilePool pool(2, cache);
  double busy_before = pool.busy_seconds();
  for (int size : sizes) {
    // A copy: the future is a temporary and takes the shared state with it.
    CompileResult result = pool.submit(reduce_request(size)).get();
    ASSERT_TRUE(result.ok);
    EXPECT_TRUE(result.from_cache);
    EXPECT_EQ(result.compile_ms, 0);
    EXPECT_EQ(result.lowered_name, reduce_lowered_name(size));
  }
  EXPECT_EQ(pool.compiles(), 0u);
  EXPECT_EQ(pool.busy_seconds(), busy_before);
}

TEST_F(PoolTest, FailuresComeBackAsData) {
  auto cache = std::make_shared<CompileCache>(dir_ / "cache");
  CompilePool pool(2, cache);
  CompileRequest bad = reduce_request(128);
  bad.source += "\n#error deliberately broken\n";
  CompileResult result = pool.submit(bad).get();
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.log.find("deliberately broken"), std::string::npos);
  // Not cached: a second submission compiles again.
  EXPECT_FALSE(pool.submit(bad).get().from_cache);
  EXPECT_EQ(pool.compiles(), 2u);
}

TEST_F(PoolTest, DestructorFinishesQueuedWork) {
  std::vector<std::shared_future<CompileResult>> futures;
  {
    CompilePool pool(1, nullptr);
    for (int size : {32, 64, 128}) futures.push_back(pool.submit(reduce_request(size)));
  }
  for (auto& future : futures) {
    ASSERT_EQ(future.wait_for(std::chrono::seconds(0)), std::future_status::ready);
    EXPECT_TRUE(future.get().ok);
  }
}

TEST_F(PoolTest, ZeroThreadsMeansHardwareConcurrency) {
  CompilePool pool(0, nullptr);
  EXPECT_EQ(pool.threads(), std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace
}  // namespace ktune
