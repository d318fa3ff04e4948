// `ktune check` and what it is built from: an empty space explained restriction by restriction,
// a parameter that changes nothing found by comparing CUBINs (NVRTC, no GPU), a reference
// configuration outside the space, the quick check at load time, and the launch geometry that
// `space` and `compile` print.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ktune/check.h"
#include "ktune/compiler.h"
#include "ktune/error.h"
#include "ktune/instance.h"
#include "ktune/job.h"
#include "ktune/registry.h"
#include "tuner/cli_test_util.h"

namespace ktune {
namespace {

namespace fs = std::filesystem;
using test::contains;

Parameter param(std::string name, std::vector<Value> values) {
  Parameter p;
  p.name = std::move(name);
  p.values = std::move(values);
  return p;
}

// out[i] = UNROLL over a block of block_size threads; `ghost` is declared but never read.
KernelSpec ghost_kernel() {
  KernelSpec k;
  k.name = "ghost";
  k.source =
      "extern \"C\" __global__ void ghost(float* out) {\n"
      "  float s = 0;\n"
      "#pragma unroll\n"
      "  for (int i = 0; i < UNROLL; ++i) s += i * 0.5f;\n"
      "  out[blockIdx.x * blockDim.x + threadIdx.x] = s;\n"
      "}\n";
  k.source_name = "ghost.cu";
  k.entry = "ghost";
  k.params = {param("block_size", {Value(32), Value(64)}), param("unroll", {Value(1), Value(4)}),
              param("ghost", {Value(1), Value(2), Value(3)})};
  k.problem = {{"n", 1024, ""}};
  k.launch.grid[0] = "div_up(n, block_size)";
  k.launch.block[0] = "block_size";
  BufferSpec out;
  out.name = "out";
  out.role = BufferRole::kOutput;
  out.size = "n";
  k.buffers = {out};
  ArgSpec a;
  a.buffer = "out";
  k.args = {a};
  k.reference_config = "unroll=1";
  k.origin = "test";
  return k;
}

const CheckFinding& finding(const std::vector<CheckFinding>& all, const std::string& topic) {
  for (const auto& f : all)
    if (f.topic == topic) return f;
  static const CheckFinding none{CheckFinding::Level::kError, "none", "no such finding"};
  ADD_FAILURE() << "no finding on " << topic;
  return none;
}
// The answer refers into `all`: a temporary list would be gone before it is read.
const CheckFinding& finding(std::vector<CheckFinding>&& all, const std::string& topic) = delete;

TEST(Check, AParameterThatChangesNothingIsNamed) {
  const KernelSpec k = ghost_kernel();
  k.validate();
  const KernelInstance instance(k, k.make_problem({}), DeviceLimits::for_arch(90));
  CheckOptions options;
  options.arch = "sm_90";
  const auto findings = check_kernel(instance, options);
  const auto& ghost = finding(findings, "parameter 'ghost'");
  EXPECT_EQ(ghost.level, CheckFinding::Level::kWarning) << ghost.message;
  EXPECT_TRUE(contains(ghost.message, "same CUBIN")) << ghost.message;
  EXPECT_TRUE(contains(ghost.message, "GHOST")) << ghost.message;
  const auto& unroll = finding(findings, "parameter 'unroll'");
  EXPECT_EQ(unroll.level, CheckFinding::Level::kOk) << unroll.message;
  EXPECT_TRUE(contains(unroll.message, "changes the code")) << unroll.message;
  // block_size is read by the launch, not the source: that counts.
  const auto& block = finding(findings, "parameter 'block_size'");
  EXPECT_EQ(block.level, CheckFinding::Level::kOk) << block.message;
  EXPECT_TRUE(contains(block.message, "changes the launch")) << block.message;
  EXPECT_EQ(finding(findings, "space").level, CheckFinding::Level::kOk);
  EXPECT_EQ(finding(findings, "reference").level, CheckFinding::Level::kOk);
  EXPECT_EQ(finding(findings, "geometry").level, CheckFinding::Level::kOk);
}

TEST(Check, QuickCheckNamesAParameterNothingReads) {
  const auto warnings = quick_check_kernel(ghost_kernel());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].topic, "parameter 'ghost'");
  EXPECT_TRUE(contains(warnings[0].message, "no macro GHOST")) << warnings[0].message;
  // The registry keeps it for the command line to print.
  Registry r;
  r.add(ghost_kernel());
  ASSERT_EQ(r.warnings().size(), 1u);
  EXPECT_TRUE(contains(r.warnings()[0], "test: kernel 'ghost': parameter 'ghost'"));
  // Built-ins read every parameter they declare.
  Registry builtins;
  register_builtin_kernels(builtins);
  for (const KernelSpec* b : builtins.kernels())
    EXPECT_TRUE(quick_check_kernel(*b).empty())
        << b->name << ": " << quick_check_kernel(*b)[0].message;
}

// An entry whose template arguments name a macro nothing defines would fail to compile in
// every configuration: the quick check (what `list` and every load print) says so.
TEST(Check, AnEntryNamingAMacroNothingDefinesIsAWarning) {
  KernelSpec k = ghost_kernel();
  k.entry = "ghost<UNROLL, N, GHOST, TILE_W, 4, float>";
  auto warnings = quick_check_kernel(k);
  const auto entry = std::find_if(warnings.begin(), warnings.end(),
                                  [](const CheckFinding& f) { return f.topic == "entry"; });
  ASSERT_NE(entry, warnings.end());
  EXPECT_TRUE(contains(entry->message, "names TILE_W, which no parameter")) << entry->message;
  k.source = "#define TILE_W 4\n" + k.source;
  warnings = quick_check_kernel(k);
  EXPECT_TRUE(std::none_of(warnings.begin(), warnings.end(),
                           [](const CheckFinding& f) { return f.topic == "entry"; }));
}

TEST(Check, AReferenceOutsideTheSpaceIsAnError) {
  KernelSpec k = ghost_kernel();
  k.restrictions = {"unroll > 1"};
  const KernelInstance instance(k, k.make_problem({}), DeviceLimits::for_arch(90));
  CheckOptions options;
  options.compile = false;
  const auto findings = check_kernel(instance, options);
  const auto& ref = finding(findings, "reference");
  EXPECT_EQ(ref.level, CheckFinding::Level::kError);
  EXPECT_TRUE(contains(ref.message, "unroll=1")) << ref.message;
  EXPECT_TRUE(contains(ref.message, "unroll > 1")) << ref.message;
  EXPECT_FALSE(quick_check_kernel(k).empty());
}

TEST(Check, AReferenceIsAConfigurationOfTheDeclaredSpaceWhateverAJobNarrows) {
  // The job keeps only unroll = 4 and adds a restriction the reference breaks; the reference
  // (unroll = 1) is a configuration of the kernel's own space, so the check passes.
  JobFile job;
  job.space = {{"unroll", {Value(4)}}};
  job.restrictions = {"unroll > 1"};
  const KernelSpec k = apply_job(ghost_kernel(), job);
  EXPECT_EQ(k.params[1].values, std::vector<Value>{Value(4)});
  const KernelInstance instance(k, k.make_problem({}), DeviceLimits::for_arch(90));
  CheckOptions options;
  options.compile = false;
  const std::vector<CheckFinding> findings = check_kernel(instance, options);
  const auto& ref = finding(findings, "reference");
  EXPECT_EQ(ref.level, CheckFinding::Level::kOk) << ref.message;
  EXPECT_TRUE(contains(ref.message, "unroll=1")) << ref.message;
}

TEST(Check, AnEmptySpaceNamesTheRestrictionsThatEmptiedIt) {
  KernelSpec k = ghost_kernel();
  k.restrictions = {"block_size >= 32", "n < 1000"};  // the problem's n is 1024
  const KernelInstance instance(k, k.make_problem({}), DeviceLimits::for_arch(90));
  CheckOptions options;
  options.compile = false;
  const auto findings = check_kernel(instance, options);
  const auto& space = finding(findings, "space");
  EXPECT_EQ(space.level, CheckFinding::Level::kError);
  EXPECT_TRUE(contains(space.message, "emptied by 'n < 1000'")) << space.message;
  EXPECT_TRUE(
      contains(space.message, "'n < 1000' removes 12 of 12 on its own; without it 12 valid"))
      << space.message;
  EXPECT_TRUE(contains(space.message, "'block_size >= 32' removes 0 of 12")) << space.message;
}

TEST(Check, RestrictionsThatOnlyTogetherEmptyTheSpaceAreSaidSo) {
  const SearchSpace space({param("a", {Value(1), Value(2), Value(3), Value(4)})},
                          {"a > 2", "a < 2"});
  const auto impacts = restriction_impacts(space);
  ASSERT_EQ(impacts.size(), 2u);
  EXPECT_EQ(impacts[0].valid_alone, 2u);
  EXPECT_EQ(impacts[0].valid_without, 1u);
  const auto lines = explain_empty_space(space);
  EXPECT_EQ(lines[0], "emptied by 'a > 2' and 'a < 2'");
  const SearchSpace three({param("a", {Value(1), Value(2), Value(3)})},
                          {"a != 1", "a != 2", "a != 3"});
  // Without any one of the three, a configuration is valid: each is named.
  EXPECT_EQ(explain_empty_space(three)[0], "emptied by 'a != 1', 'a != 2', 'a != 3'");
  const SearchSpace twice({param("a", {Value(1), Value(2)})}, {"a > 5", "a > 6"});
  EXPECT_EQ(explain_empty_space(twice)[0],
            "it stays empty without any one of its restrictions: several empty it");
}

// ---------------------------------------------------------------------------------------------
// The command line

class CheckCli : public ::testing::Test {
 protected:
  test::CliResult run(const std::vector<std::string>& args) const {
    return test::run_ktune(args, tmp_.path(), tmp_.path() / "cache");
  }
  test::TempDir tmp_;
};

TEST_F(CheckCli, BuiltinPassesAndSaysWhatItChecked) {
  const auto r = run({"check", "reduce", "--arch", "sm_90", "-p", "n=2**20"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "check reduce [n=1048576]")) << r;
  EXPECT_TRUE(contains(r.out, "0 errors, 0 warnings")) << r;
  EXPECT_TRUE(contains(r.out, "parameter 'unroll'")) << r;
  const auto j = nlohmann::json::parse(
      run({"check", "reduce", "--arch", "sm_90", "--no-compile", "--json"}).out);
  EXPECT_EQ(j.at("findings").at(0).at("topic"), "space");
}

TEST_F(CheckCli, EmptySpaceIsAnErrorInCheckAndSpace) {
  test::write_file(tmp_ / "empty.toml",
                   "kernel = \"reduce\"\nrestrictions = [\"block_size > 100000\"]\n");
  const auto c = run({"check", "--config", "empty.toml", "--arch", "sm_90", "--no-compile"});
  EXPECT_EQ(c.code, 1) << c;
  EXPECT_TRUE(contains(c.out, "emptied by 'block_size > 100000'")) << c;
  const auto s = run({"space", "--config", "empty.toml", "--arch", "sm_90"});
  EXPECT_EQ(s.code, exit_code(ErrorKind::kUsage)) << s;
  EXPECT_TRUE(contains(s.err, "the space is empty")) << s;
  EXPECT_TRUE(contains(s.err, "'block_size > 100000' removes")) << s;
}

TEST_F(CheckCli, SpaceAndCompilePrintTheLaunchGeometry) {
  const auto s = run({"space", "reduce", "--arch", "sm_90", "-p", "n=2**20", "--sample", "2"});
  ASSERT_EQ(s.code, 0) << s;
  EXPECT_TRUE(contains(s.out, "      grid (")) << s;
  EXPECT_TRUE(contains(s.out, "block (")) << s;
  const auto c =
      run({"compile", "reduce", "--arch", "sm_90", "-p", "n=2**20", "-s", "block_size=128"});
  ASSERT_EQ(c.code, 0) << c;
  EXPECT_TRUE(contains(c.out, "  launch     grid (")) << c;
  EXPECT_TRUE(contains(c.out, "block (128, 1, 1)")) << c;
  const auto j = nlohmann::json::parse(
      run({"compile", "reduce", "--arch", "sm_90", "-s", "block_size=128", "--json"}).out);
  EXPECT_EQ(j.at("launch").at("block").at(0), 128);
}

}  // namespace
}  // namespace ktune
