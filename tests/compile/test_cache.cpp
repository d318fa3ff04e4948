// CompileCache and compile_cached(): round trips, damaged entries read as misses, and a cache
// that cannot be written never stops a compile.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/env_guard.h"
#include "compile/compile_test_util.h"
#include "ktune/compiler.h"

namespace ktune {
namespace {

namespace fs = std::filesystem;
using test::reduce_request;

class CacheTest : public test::TempDirTest {
 protected:
  // Files in the cache dir (entries and any leftover temporaries).
  std::vector<fs::path> files() const {
    std::vector<fs::path> out;
    for (const auto& entry : fs::directory_iterator(dir_ / "cache")) out.push_back(entry.path());
    return out;
  }
  static std::string read(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  static void write(const fs::path& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  }
  // The cache's one entry after a successful put.
  fs::path stored_entry() {
    const CompileRequest request = reduce_request(64);
    CompileResult result = compile(request);
    EXPECT_TRUE(result.ok) << result.error;
    EXPECT_TRUE(cache_.put(result));
    EXPECT_TRUE(cache_.get(request).has_value());
    std::vector<fs::path> all = files();
    EXPECT_EQ(all.size(), 1u);
    return all.at(0);
  }
  CompileCache cache_{fs::path()};  // replaced in SetUp, once dir_ exists
  void SetUp() override {
    TempDirTest::SetUp();
    cache_ = CompileCache(dir_ / "cache");
  }
};

TEST_F(CacheTest, RoundTrip) {
  const CompileRequest request = reduce_request(256);
  EXPECT_FALSE(cache_.get(request).has_value());
  CompileResult compiled = compile(request);
  ASSERT_TRUE(compiled.ok) << compiled.error;
  ASSERT_TRUE(cache_.put(compiled));  // creates the directory too

  std::optional<CompileResult> hit = cache_.get(request);
  ASSERT_TRUE(hit.has_value());
  EXPECT_TRUE(hit->ok);
  EXPECT_TRUE(hit->from_cache);
  EXPECT_EQ(hit->compile_ms, 0);
  EXPECT_EQ(hit->cubin, compiled.cubin);
  EXPECT_EQ(hit->lowered_name, compiled.lowered_name);
  EXPECT_EQ(hit->log, compiled.log);
  EXPECT_EQ(hit->options, compiled.options);
  EXPECT_EQ(hit->arch, compiled.arch);
  EXPECT_EQ(hit->key, compiled.key);
  EXPECT_EQ(hit->resources.registers, compiled.resources.registers);
  EXPECT_EQ(hit->resources.static_shared_bytes, 256 * 4);
  EXPECT_EQ(hit->resources.spill_store_bytes, compiled.resources.spill_store_bytes);
  EXPECT_EQ(hit->resources.constant_bytes, compiled.resources.constant_bytes);

  // One file named by the key, no temporaries left behind.
  std::vector<fs::path> all = files();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].filename().string(), compiled.key + ".kcubin");

  // Other requests miss.
  EXPECT_FALSE(cache_.get(reduce_request(128)).has_value());
  EXPECT_FALSE(cache_.get(reduce_request(256, "sm_80")).has_value());
}

TEST_F(CacheTest, FailedCompilesAreNotKept) {
  CompileRequest request = reduce_request(128);
  request.source += "\nthis is not C++;\n";
  CompileResult result = compile(request);
  ASSERT_FALSE(result.ok);
  EXPECT_FALSE(cache_.put(result));
  EXPECT_FALSE(cache_.get(request).has_value());
  EXPECT_FALSE(fs::exists(dir_ / "cache") && !files().empty());
}

TEST_F(CacheTest, TruncatedEntryIsAMiss) {
  fs::path entry = stored_entry();
  std::string bytes = read(entry);
  for (std::size_t size : {std::size_t{0}, std::size_t{10}, bytes.size() / 2, bytes.size() - 1}) {
    write(entry, bytes.substr(0, size));
    EXPECT_FALSE(cache_.get(reduce_request(64)).has_value()) << "truncated to " << size;
  }
}

TEST_F(CacheTest, DamagedEntryIsAMiss) {
  fs::path entry = stored_entry();
  const std::string bytes = read(entry);
  // A flipped byte inside the CUBIN (just before the end record).
  std::string flipped = bytes;
  flipped[bytes.size() - 20] ^= 0x5a;
  write(entry, flipped);
  EXPECT_FALSE(cache_.get(reduce_request(64)).has_value());
  // Garbage, a foreign header, and trailing bytes after the end record.
  for (const std::string& damaged : {std::string("not a cache entry"),
                                     "ktune-compile-cache 999\n" + bytes.substr(22), bytes + "x"}) {
    write(entry, damaged);
    EXPECT_FALSE(cache_.get(reduce_request(64)).has_value());
  }
  // The entry of another key under this key's name.
  CompileResult other = compile(reduce_request(32));
  ASSERT_TRUE(cache_.put(other));
  fs::copy_file(dir_ / "cache" / (other.key + ".kcubin"), entry,
                fs::copy_options::overwrite_existing);
  EXPECT_FALSE(cache_.get(reduce_request(64)).has_value());
  // The intact bytes read as a hit again.
  write(entry, bytes);
  EXPECT_TRUE(cache_.get(reduce_request(64)).has_value());
}

TEST_F(CacheTest, CompileCachedRepairsADamagedEntry) {
  fs::path entry = stored_entry();
  write(entry, "garbage");
  CompileResult again = compile_cached(reduce_request(64), &cache_);
  ASSERT_TRUE(again.ok);
  EXPECT_FALSE(again.from_cache);
  CompileResult hit = compile_cached(reduce_request(64), &cache_);
  EXPECT_TRUE(hit.from_cache);
  EXPECT_EQ(hit.cubin, again.cubin);
}

TEST_F(CacheTest, UnwritableDirectoryIsNotFatal) {
  // A path below a regular file can never be created, even by root.
  write(dir_ / "file", "x");
  CompileCache broken(dir_ / "file" / "cache");
  const CompileRequest request = reduce_request(128);
  CompileResult result = compile(request);
  ASSERT_TRUE(result.ok);
  EXPECT_FALSE(broken.put(result));
  EXPECT_FALSE(broken.get(request).has_value());
  CompileResult through = compile_cached(request, &broken);
  EXPECT_TRUE(through.ok);
  EXPECT_FALSE(through.from_cache);
  EXPECT_EQ(through.cubin, result.cubin);
}

TEST_F(CacheTest, ConcurrentWritersAndReaders) {
  const CompileRequest request = reduce_request(128);
  CompileResult result = compile(request);
  ASSERT_TRUE(result.ok);
  std::atomic<int> partial{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      CompileCache cache(dir_ / "cache");
      for (int i = 0; i < 50; ++i) {
        if (t % 2 == 0) {
          cache.put(result);
        } else if (std::optional<CompileResult> hit = cache.get(request)) {
          if (hit->cubin != result.cubin) ++partial;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(partial.load(), 0);
  EXPECT_EQ(files().size(), 1u);  // temporaries renamed away, never left behind
  EXPECT_TRUE(cache_.get(request).has_value());
}

TEST_F(CacheTest, CompileCachedWithoutCache) {
  CompileResult result = compile_cached(reduce_request(128), nullptr);
  EXPECT_TRUE(result.ok);
  EXPECT_FALSE(result.from_cache);
}

TEST(CacheDefaultDir, FollowsTheEnvironment) {
  test::EnvGuard home("HOME", "/home/someone");
  {
    test::EnvGuard ktune("KTUNE_CACHE_DIR", "/tmp/ktune-here");
    test::EnvGuard xdg("XDG_CACHE_HOME", "/tmp/xdg");
    EXPECT_EQ(CompileCache::default_dir(), fs::path("/tmp/ktune-here"));
  }
  {
    test::EnvGuard ktune("KTUNE_CACHE_DIR", std::nullopt);
    test::EnvGuard xdg("XDG_CACHE_HOME", "/tmp/xdg");
    EXPECT_EQ(CompileCache::default_dir(), fs::path("/tmp/xdg/ktune"));
  }
  {
    test::EnvGuard ktune("KTUNE_CACHE_DIR", "");
    test::EnvGuard xdg("XDG_CACHE_HOME", std::nullopt);
    EXPECT_EQ(CompileCache::default_dir(), fs::path("/home/someone/.cache/ktune"));
  }
}

}  // namespace
}  // namespace ktune
