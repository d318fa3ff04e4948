// Export for programs without a database: the JSON lists every best (newest kernel version per
// device and problem) with its measurement; the C++ header compiles on its own, keeps the
// measurement in comments and its lookup() falls through as the client does.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>

#include "client_test_util.h"

namespace ktune::test {
namespace {

using ::testing::HasSubstr;

class Export : public ClientTest {
 protected:
  void SetUp() override {
    ClientTest::SetUp();
    Store store = Store::open(db_path_);
    const std::int64_t v1 = store.upsert_kernel(reduce_record("src-1"));
    const auto best = [&](std::int64_t kernel, const DeviceRecord& d, std::int64_t n, int block,
                          double ms) {
      BestSpec b;
      b.kernel_id = kernel;
      b.device = d;
      b.problem = {{"n", n}};
      b.config_json = R"({"block_size": )" + std::to_string(block) +
                      R"(, "variant": 9, "elements_per_thread": 8})";
      b.config_key = "block_size=" + std::to_string(block) + ",variant=9,elements_per_thread=8";
      b.time_ms = ms;
      add_best(store, b);
    };
    best(v1, h200(), 1 << 20, 64, 0.01);  // replaced by version 2 below
    best(v1, h200(), 1 << 28, 1024, 0.25);
    best(v1, a100(), 1 << 24, 128, 0.09);
    best(v1, a40(), 1 << 24, 256, 0.12);
    const std::int64_t v2 = store.upsert_kernel(reduce_record("src-2"));
    best(v2, h200(), 1 << 20, 512, 0.008);
    best(v2, h200(), 1 << 24, 256, 0.0213);
    BestSpec replayed;  // a replayed run: never exported
    replayed.kernel_id = v2;
    replayed.device = h100_sxm();
    replayed.problem = {{"n", 1 << 24}};
    replayed.time_ms = 0.001;
    replayed.replayed = true;
    add_best(store, replayed);
  }
};

TEST_F(Export, JsonHasEveryBestWithItsMeasurement) {
  std::ostringstream out;
  export_json(db_path_, out);
  const nlohmann::json j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j["format"], "ktune-best-export");
  EXPECT_EQ(j["version"], 1);
  EXPECT_EQ(j["schema_version"], Client::kSchemaVersion);
  const auto& reduce = j["kernels"]["reduce"];
  EXPECT_EQ(reduce["parameters"], nlohmann::json({"block_size", "variant", "elements_per_thread"}));
  EXPECT_EQ(reduce["problem"], nlohmann::json({"n"}));
  ASSERT_EQ(reduce["configs"].size(), 5u);
  // Newest architecture first, then device name and problem.
  const auto& first = reduce["configs"][0];
  EXPECT_EQ(first["device"]["name"], "NVIDIA H200");
  EXPECT_EQ(first["device"]["arch"], "sm_90");
  EXPECT_EQ(first["problem"]["n"], 1 << 20);
  EXPECT_EQ(first["config"]["block_size"], 512) << "version 2 replaced version 1's best";
  EXPECT_EQ(first["source_hash"], "src-2");
  EXPECT_DOUBLE_EQ(first["time_ms"].get<double>(), 0.008);
  EXPECT_EQ(first["samples"], 30);
  EXPECT_DOUBLE_EQ(first["gbps"].get<double>(), 1000);
  EXPECT_GT(first["trial_id"].get<int>(), 0);
  EXPECT_EQ(reduce["configs"][3]["device"]["arch"], "sm_86");
  EXPECT_EQ(reduce["configs"][4]["device"]["arch"], "sm_80");

  std::ostringstream none;
  ExportOptions only;
  only.kernel = "transpose";
  export_json(db_path_, none, only);
  EXPECT_TRUE(nlohmann::json::parse(none.str())["kernels"].empty());
}

TEST_F(Export, HeaderTablesWithMeasurementComments) {
  std::ostringstream out;
  export_header(db_path_, out);
  const std::string h = out.str();
  EXPECT_THAT(h, HasSubstr("#pragma once"));
  EXPECT_THAT(h, HasSubstr("namespace ktune_tuned {"));
  EXPECT_THAT(h, HasSubstr("namespace reduce {"));
  EXPECT_THAT(h, HasSubstr("  std::int64_t n;  // problem\n"));
  EXPECT_THAT(h, HasSubstr("  std::int64_t block_size;\n"));
  EXPECT_THAT(h, HasSubstr("// NVIDIA H200 (sm_90, 132 SMs), n=16777216: 0.0213 ms median of 30 "
                           "runs (spread 2.00%), 1000.0 GB/s"));
  EXPECT_THAT(h, HasSubstr("{90, \"sm_90\", \"NVIDIA H200\", 16777216, 256, 9, 8, 0.0213},"));
  EXPECT_THAT(
      h, HasSubstr(
             "inline const Config* lookup(int cc, std::int64_t n, const char* device = nullptr)"));
}

// Compiles a program against the exported header with the C++ compiler of this build and runs it.
TEST_F(Export, HeaderCompilesAndItsLookupFallsThroughAsTheClientDoes) {
  const auto header = dir_ / "tuned.h";
  ExportOptions o;
  o.namespace_name = "my_tuning";
  export_header_file(db_path_, header, o);
  EXPECT_FALSE(std::filesystem::exists(header.string() + ".tmp"));
  const auto program = dir_ / "main.cpp";
  write_bytes(program, R"cpp(#include "tuned.h"
#include <cstdio>
#include <string_view>
                             namespace r = my_tuning::reduce;
                             static_assert(sizeof(r::kConfigs) / sizeof(r::kConfigs[0]) == 5,
                                           "five"
                                           " row"
                                           "s");
                             static_assert(r::kConfigs[0].cc == 90, "newest architecture first");
                             int check(const r::Config* c, long long block, const char* arch, const char* what) {
                               if (c == nullptr || c->block_size != block || std::string_view(c->arch) != arch) {
                                 std::printf("%s: got %s block_size %lld\n", what,
                                             c ? c->arch : "nothing",
                                             c ? (long long)c->block_size : -1);
                                 return 1;
                               }
                               return 0;
                             }
                             int main() {
                               int failures = 0;
                               failures += check(r::lookup(90, 1 << 24), 256, "sm_90", "exact");
                               failures += check(r::lookup(90, 1 << 23), 256, "sm_90", "nearest");
                               failures += check(r::lookup(90, 1 << 22), 256, "sm_90", "tie goes to the larger problem");
                               failures += check(r::lookup(90, 1LL << 30, "NVIDIA H200"), 1024, "sm_90", "named device");
                               failures += check(r::lookup(87, 1 << 24), 256, "sm_86", "newest minor at or below");
                               failures += check(r::lookup(80, 1 << 24), 128, "sm_80", "same arch");
                               failures += (r::lookup(75, 1 << 24) != nullptr);
                               failures += (r::lookup(100, 1 << 24) != nullptr);
                               std::printf("%d failures\n", failures);
                               return failures;
                             }
  )cpp");
  const auto exe = dir_ / "main";
  const std::string compile = std::string(KTUNE_CXX_COMPILER) +
                              " -std=c++17 -Wall -Wextra -Werror -I" + dir_.string() + " " +
                              program.string() + " -o " + exe.string() + " 2>&1";
  ASSERT_EQ(std::system(compile.c_str()), 0) << compile;
  EXPECT_EQ(std::system(exe.c_str()), 0);
}

TEST_F(Export, ADatabaseTheClientRefusesIsRefusedHereToo) {
  std::ostringstream out;
  expect_error(ErrorKind::kDatabase, "no such database",
               [&] { export_json(dir_ / "missing.db", out); });
  expect_error(ErrorKind::kUsage, "cannot write",
               [&] { export_header_file(db_path_, dir_ / "no-such-dir" / "tuned.h"); });
}

// `ktune export KERNEL --header FILE --best-json FILE` writes the same as the library calls.
TEST_F(Export, TheCommandLineWritesTheHeaderAndTheJson) {
  const auto header = dir_ / "cli.h";
  const auto json = dir_ / "cli.json";
  const std::string command = std::string(KTUNE_EXE) + " export reduce --header " +
                              header.string() + " --best-json " + json.string() + " --db " +
                              db_path_.string() + " > " + (dir_ / "out.txt").string() + " 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << read_bytes(dir_ / "out.txt");
  EXPECT_THAT(read_bytes(dir_ / "out.txt"),
              HasSubstr("wrote the best configurations of reduce to " + header.string()));
  std::ostringstream expected_header, expected_json;
  ExportOptions o;
  o.kernel = "reduce";
  export_header(db_path_, expected_header, o);
  export_json(db_path_, expected_json, o);
  EXPECT_EQ(read_bytes(header), expected_header.str());
  EXPECT_EQ(read_bytes(json), expected_json.str());
}

}  // namespace
}  // namespace ktune::test
