// KernelInstance and render(): launch geometry, buffer sizes, scalar arguments and metrics
// evaluated per configuration; the macros and options a configuration renders to; device
// limits as restrictions; and the NVRTC compile-only test of the built-in reduction (a seeded
// sample of its valid space plus every variant, for sm_90, no GPU needed).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "ktune/compiler.h"
#include "ktune/error.h"
#include "ktune/instance.h"
#include "ktune/registry.h"
#include "tuner/cli_test_util.h"

namespace ktune {
namespace {

using test::contains;
using test::expect_error;
using Defines = std::vector<std::pair<std::string, std::string>>;

constexpr std::int64_t kN = std::int64_t{1} << 25;

class Instance : public ::testing::Test {
 protected:
  void SetUp() override {
    register_builtin_kernels(registry_);
    registry_.load_manifest(test::valid_manifest());
  }
  KernelInstance reduce(std::int64_t n = kN,
                        DeviceLimits limits = DeviceLimits::for_arch(90)) const {
    return KernelInstance(registry_.get("reduce"), {{"n", n}}, limits);
  }
  KernelInstance vecscale(std::int64_t n = 1000) const {
    return KernelInstance(registry_.get("vecscale"), {{"n", n}}, DeviceLimits::for_arch(90));
  }
  static Config config(const KernelInstance& instance,
                       const std::map<std::string, std::string>& sets) {
    return instance.space().from_assignments(sets);
  }
  static std::string define(const Defines& defines, const std::string& name) {
    for (const auto& [n, v] : defines)
      if (n == name) return v;
    ADD_FAILURE() << "no #define " << name;
    return {};
  }
  static bool has_define(const Defines& defines, const std::string& name) {
    return std::any_of(defines.begin(), defines.end(),
                       [&](const auto& d) { return d.first == name; });
  }
  Registry registry_;
};

template <typename T>
T scalar_as(const ScalarArg& a) {
  T v{};
  std::memcpy(&v, a.bytes.data(), sizeof(T));
  return v;
}

// ---------------------------------------------------------------------------------------------
// Evaluation of the description's expressions

TEST_F(Instance, GeometryUsesDivUpOverProblemAndParameters) {
  const KernelInstance inst = reduce();
  EXPECT_EQ(inst.problem().at("n"), kN);
  EXPECT_EQ(inst.problem_key(), "n=33554432");
  // Default config: block 256, 8 elements per thread -> 2^25 / 2048 blocks.
  LaunchGeometry g = inst.geometry(inst.space().default_config());
  EXPECT_EQ(g.grid, (std::array<std::uint32_t, 3>{16384, 1, 1}));
  EXPECT_EQ(g.block, (std::array<std::uint32_t, 3>{256, 1, 1}));
  EXPECT_EQ(g.shared_mem, 256u * 4);
  EXPECT_EQ(g.threads_per_block(), 256u);

  g = inst.geometry(config(inst, {{"block_size", "32"}, {"elements_per_thread", "2"}}));
  EXPECT_EQ(g.grid[0], kN / 64);
  EXPECT_EQ(g.block[0], 32u);
  EXPECT_EQ(g.shared_mem, 64u * 4);  // max(block_size, 64) * 4

  // A remainder rounds up, and a tiny problem still gets one block.
  const KernelInstance odd = reduce(1000003);
  EXPECT_EQ(
      odd.geometry(
             config(odd, {{"block_size", "1024"}, {"elements_per_thread", "1"}, {"variant", "1"}}))
          .grid[0],
      977u);  // ceil(1000003 / 1024)
  const KernelInstance tiny = reduce(5);
  EXPECT_EQ(tiny.geometry(tiny.space().default_config()).grid[0], 1u);
}

TEST_F(Instance, BufferSizesFollowTheirExpressions) {
  // The fixture's sizes, exactly: in and out hold 2n floats, flags one int per block.
  const KernelInstance v = vecscale(1000);
  EXPECT_EQ(v.buffer_sizes(config(v, {{"block_size", "64"}})),
            (std::vector<std::uint64_t>{2000, 2000, 16}));
  EXPECT_EQ(v.buffer_sizes(config(v, {{"block_size", "1024"}})),
            (std::vector<std::uint64_t>{2000, 2000, 1}));
  EXPECT_EQ(vecscale(1).buffer_sizes(v.space().default_config()),
            (std::vector<std::uint64_t>{2, 2, 1}));

  // reduce: the input, one result, and room for the partial sums of the first two levels.
  const KernelInstance inst = reduce();
  for (const auto& sets :
       {std::map<std::string, std::string>{},
        std::map<std::string, std::string>{{"block_size", "1024"}, {"elements_per_thread", "32"}},
        std::map<std::string, std::string>{{"block_size", "32"}, {"elements_per_thread", "2"}}}) {
    const Config c = config(inst, sets);
    const std::vector<std::uint64_t> sizes = inst.buffer_sizes(c);
    ASSERT_EQ(sizes.size(), 3u);
    EXPECT_EQ(sizes[0], std::uint64_t(kN));
    EXPECT_EQ(sizes[1], 1u);
    const std::uint64_t first = inst.geometry(c).grid[0];
    const std::uint64_t tile =
        std::uint64_t(inst.geometry(c).block[0]) *
        std::uint64_t(
            inst.space().value(c, inst.space().param_index("elements_per_thread")).as_int());
    EXPECT_GE(sizes[2], first + (first + tile - 1) / tile) << inst.space().key(c);
  }
}

TEST_F(Instance, ScalarArgumentsAreConvertedToTheirTypes) {
  const KernelInstance inst = reduce();
  const std::vector<ScalarArg> args = inst.scalar_args(inst.space().default_config());
  ASSERT_EQ(args.size(), 3u);
  for (int i = 0; i < 2; ++i) {  // buffers: left empty
    EXPECT_EQ(args[i].bytes, (std::array<unsigned char, 8>{})) << i;
  }
  EXPECT_EQ(args[2].type, ElemType::kU32);
  EXPECT_EQ(scalar_as<std::uint32_t>(args[2]), 33554432u);
  EXPECT_EQ(args[2].bytes[4], 0);  // only elem_size bytes used

  const KernelInstance v = vecscale(123456);
  const std::vector<ScalarArg> vargs = v.scalar_args(v.space().default_config());
  ASSERT_EQ(vargs.size(), 4u);
  EXPECT_EQ(vargs[2].type, ElemType::kU32);
  EXPECT_EQ(scalar_as<std::uint32_t>(vargs[2]), 123456u);
  EXPECT_EQ(vargs[3].type, ElemType::kF32);
  EXPECT_EQ(scalar_as<float>(vargs[3]), 0.5f);
  const float half = 0.5f;
  EXPECT_EQ(std::memcmp(vargs[3].bytes.data(), &half, sizeof(half)), 0);
}

TEST_F(Instance, MetricsBytesAndFlops) {
  const KernelInstance inst = reduce();
  EXPECT_DOUBLE_EQ(inst.bytes(inst.space().default_config()), 4.0 * kN);
  EXPECT_TRUE(std::isnan(inst.flops(inst.space().default_config())));  // none declared

  const KernelInstance v = vecscale(1000);
  EXPECT_DOUBLE_EQ(v.bytes(v.space().default_config()), 16000.0);
  EXPECT_DOUBLE_EQ(v.flops(v.space().default_config()), 2000.0);
}

TEST_F(Instance, EvaluationErrorsNameKernelConfigAndField) {
  KernelSpec k = registry_.get("vecscale");
  k.name = "divider";
  k.params.push_back({"d", {Value(0), Value(1), Value(2)}, 1, ""});
  k.launch.grid[0] = "n // d";
  k.buffers[0].size = "n - 10 * d * n";
  ASSERT_NO_THROW(k.validate());
  const KernelInstance inst(k, {{"n", 8}}, DeviceLimits::for_arch(90));
  expect_error(ErrorKind::kInput, {"divider[", "d=0", "grid.x"}, [&] {
    inst.geometry(config(inst, {{"d", "0"}}));
  });
  expect_error(ErrorKind::kInput, {"divider[", "grid.x is 0", "outside"}, [&] {
    KernelInstance(k, {{"n", 1}}, DeviceLimits::for_arch(90)).geometry(config(inst, {{"d", "2"}}));
  });
  expect_error(ErrorKind::kInput, {"buffer 'in' size is negative"}, [&] {
    inst.buffer_sizes(config(inst, {{"d", "1"}}));
  });
  EXPECT_EQ(inst.geometry(config(inst, {{"d", "2"}})).grid[0], 4u);

  // A broken expression is refused when the instance is built, naming the field.
  k.bytes = "4 * nn";
  expect_error(ErrorKind::kInput, {"divider", "bytes", "nn"}, [&] {
    KernelInstance(k, {{"n", 8}}, DeviceLimits::for_arch(90));
  });
  // So is an unknown problem parameter.
  expect_error(ErrorKind::kUsage, {"unknown problem parameter 'm'"}, [&] {
    KernelInstance(registry_.get("reduce"), {{"m", 8}}, DeviceLimits::for_arch(90));
  });
}

// ---------------------------------------------------------------------------------------------
// Macros and options of a configuration

TEST_F(Instance, DefinesOfTheDefaultConfigInDeclarationOrder) {
  const KernelInstance inst = reduce();
  EXPECT_EQ(inst.defines(inst.space().default_config()), (Defines{{"BLOCK_SIZE", "256"},
                                                                  {"VARIANT", "7"},
                                                                  {"ELEMENTS_PER_THREAD", "8"},
                                                                  {"UNROLL", "1"},
                                                                  {"MAXRREGCOUNT", "0"},
                                                                  {"LAUNCH_BOUNDS", "0"},
                                                                  {"KTUNE_BLOCK_X", "256"},
                                                                  {"KTUNE_BLOCK_Y", "1"},
                                                                  {"KTUNE_BLOCK_Z", "1"},
                                                                  {"KTUNE_LAUNCH_BOUNDS", ""}}));
}

TEST_F(Instance, LaunchBoundsMacro) {
  const KernelInstance inst = reduce();
  EXPECT_EQ(define(inst.defines(config(inst, {{"launch_bounds", "0"}})), "KTUNE_LAUNCH_BOUNDS"),
            "");
  EXPECT_EQ(define(inst.defines(config(inst, {{"block_size", "256"}, {"launch_bounds", "2"}})),
                   "KTUNE_LAUNCH_BOUNDS"),
            "__launch_bounds__(256, 2)");
  EXPECT_EQ(define(inst.defines(config(inst, {{"block_size", "128"}, {"launch_bounds", "4"}})),
                   "KTUNE_LAUNCH_BOUNDS"),
            "__launch_bounds__(128, 4)");
  // A kernel without a launch_bounds parameter still gets the (empty) macro.
  Registry r;
  r.load_library(test::good_plugin());
  const KernelInstance saxpy(r.get("saxpy"), {}, DeviceLimits::for_arch(90));
  const Defines d = saxpy.defines(saxpy.space().default_config());
  EXPECT_EQ(define(d, "KTUNE_LAUNCH_BOUNDS"), "");
  EXPECT_FALSE(has_define(d, "LAUNCH_BOUNDS"));
}

TEST_F(Instance, CategoricalParameterIsAlsoAFlag) {
  const KernelInstance v = vecscale();
  const Defines soa = v.defines(config(v, {{"layout", "soa"}}));
  EXPECT_EQ(define(soa, "LAYOUT"), "soa");
  EXPECT_EQ(define(soa, "LAYOUT_SOA"), "1");
  EXPECT_FALSE(has_define(soa, "LAYOUT_AOS"));
  const Defines aos = v.defines(config(v, {{"layout", "aos"}}));
  EXPECT_EQ(define(aos, "LAYOUT"), "aos");
  EXPECT_EQ(define(aos, "LAYOUT_AOS"), "1");
  EXPECT_FALSE(has_define(aos, "LAYOUT_SOA"));
  // Numeric parameters get no flag.
  EXPECT_FALSE(has_define(aos, "BLOCK_SIZE_128"));
  EXPECT_EQ(define(aos, "BLOCK_SIZE"), "128");
}

TEST_F(Instance, MaxrregcountOptionOnlyWhenNonZero) {
  const KernelInstance inst = reduce();
  EXPECT_TRUE(inst.config_options(config(inst, {{"maxrregcount", "0"}})).empty());
  EXPECT_EQ(inst.config_options(config(inst, {{"maxrregcount", "64"}})),
            (std::vector<std::string>{"--maxrregcount=64"}));
  Registry r;
  r.load_library(test::good_plugin());
  const KernelInstance saxpy(r.get("saxpy"), {}, DeviceLimits::for_arch(90));
  EXPECT_TRUE(saxpy.config_options(saxpy.space().default_config()).empty());
}

TEST_F(Instance, RenderBuildsTheCompileRequest) {
  const KernelInstance inst = reduce();
  const Config c = config(inst, {{"maxrregcount", "64"}, {"launch_bounds", "2"}});
  const CompileRequest req = render(inst, c, "sm_90");
  EXPECT_EQ(req.arch, "sm_90");
  EXPECT_EQ(req.entry, "reduce<BLOCK_SIZE, VARIANT, ELEMENTS_PER_THREAD, int>");
  EXPECT_EQ(req.source_name, "reduce.cu");
  EXPECT_EQ(req.options,
            (std::vector<std::string>{"-std=c++17", "--maxrregcount=64", "--gpu-architecture=sm_90",
                                      "--ptxas-options=-v", "-minimal"}));
  EXPECT_TRUE(contains(req.source, "#define BLOCK_SIZE 256\n"));
  EXPECT_TRUE(contains(req.source, "#define MAXRREGCOUNT 64\n"));
  EXPECT_TRUE(contains(req.source, "#define KTUNE_LAUNCH_BOUNDS __launch_bounds__(256, 2)\n"));
  EXPECT_TRUE(contains(req.source, "#line 1 \"reduce.cu\"\n"));
  EXPECT_TRUE(contains(req.source, inst.space().key(c)));
  // The defines come before the template, which follows unchanged.
  const std::string& tmpl = inst.kernel().source;
  ASSERT_GE(req.source.size(), tmpl.size());
  EXPECT_EQ(req.source.substr(req.source.size() - tmpl.size()), tmpl);
  EXPECT_LT(req.source.find("#define BLOCK_SIZE"), req.source.find("#line 1"));

  const CompileRequest plain = render(inst, inst.space().default_config(), "sm_80");
  // A source without #include compiles with NVRTC's minimal front end (docs/compilation.md).
  EXPECT_EQ(plain.options, (std::vector<std::string>{"-std=c++17", "--gpu-architecture=sm_80",
                                                     "--ptxas-options=-v", "-minimal"}));
  EXPECT_NE(plain.key(), req.key());
}

// ---------------------------------------------------------------------------------------------
// Device limits as restrictions

TEST_F(Instance, MakeSpaceAddsDeviceLimitRestrictions) {
  const KernelSpec& k = registry_.get("reduce");
  DeviceLimits small = DeviceLimits::for_arch(90);
  small.max_threads_per_block = 512;
  const SearchSpace space = make_space(k, {{"n", kN}}, small);
  EXPECT_GT(space.restrictions().size(), k.restrictions.size());
  const Config big = space.from_assignments({{"block_size", "1024"}});
  EXPECT_FALSE(space.is_valid(big));
  const auto broken = space.violated(big);
  ASSERT_TRUE(broken.has_value());
  EXPECT_TRUE(contains(*broken, "max_threads_per_block")) << *broken;
  EXPECT_TRUE(space.is_valid(space.from_assignments({{"block_size", "512"}})));
  // With the sm_90 limits, 1024 threads are fine.
  const SearchSpace sm90 = make_space(k, {{"n", kN}}, DeviceLimits::for_arch(90));
  EXPECT_TRUE(sm90.is_valid(sm90.from_assignments({{"block_size", "1024"}})));
  // No valid configuration of the smaller device exceeds its limit.
  for (const Config& c : space.enumerate()) ASSERT_LE(space.value(c, 0).as_int(), 512);
}

TEST_F(Instance, MakeSpaceChecksGridSharedMemoryAndGenerationLimits) {
  const KernelSpec& k = registry_.get("reduce");
  DeviceLimits limits = DeviceLimits::for_arch(90);
  limits.max_grid_dim_x = 65535;
  SearchSpace space = make_space(k, {{"n", kN}}, limits);
  Config c = space.from_assignments(
      {{"block_size", "32"}, {"elements_per_thread", "2"}});  // 524288 blocks
  ASSERT_TRUE(space.violated(c).has_value());
  EXPECT_TRUE(contains(*space.violated(c), "max_grid_dim_x")) << *space.violated(c);

  limits = DeviceLimits::for_arch(90);
  limits.max_shared_memory_per_block_optin = 1024;  // reduce needs max(block, 64) * 4 bytes
  space = make_space(k, {{"n", kN}}, limits);
  c = space.from_assignments({{"block_size", "512"}});
  ASSERT_TRUE(space.violated(c).has_value());
  EXPECT_TRUE(contains(*space.violated(c), "max_shared_memory_per_block_optin"))
      << *space.violated(c);
  EXPECT_TRUE(space.is_valid(space.from_assignments({{"block_size", "256"}})));

  // The kernel's own restriction over a device limit: 4 blocks of 512 fit an sm_90
  // multiprocessor (2048 threads) but not an sm_75 one (1024).
  const std::map<std::string, std::string> lb = {{"block_size", "512"}, {"launch_bounds", "4"}};
  const SearchSpace sm90 = make_space(k, {{"n", kN}}, DeviceLimits::for_arch(90));
  const SearchSpace sm75 = make_space(k, {{"n", kN}}, DeviceLimits::for_arch(75));
  EXPECT_TRUE(sm90.is_valid(sm90.from_assignments(lb)));
  EXPECT_FALSE(sm75.is_valid(sm75.from_assignments(lb)));

  // Problem constants reach restrictions too: reduce allows n up to 2^31.
  const SearchSpace huge =
      make_space(k, {{"n", (std::int64_t{1} << 31) + 1}}, DeviceLimits::for_arch(90));
  EXPECT_TRUE(huge.enumerate().empty());
}

TEST_F(Instance, InstanceSpaceMatchesMakeSpace) {
  const KernelInstance inst = reduce();
  const SearchSpace direct =
      make_space(registry_.get("reduce"), {{"n", kN}}, DeviceLimits::for_arch(90));
  EXPECT_EQ(inst.space().hash(), direct.hash());
  EXPECT_EQ(inst.space().enumerate(), direct.enumerate());
  std::uint64_t cartesian = 1;
  for (const Parameter& p : registry_.get("reduce").params) cartesian *= p.values.size();
  EXPECT_EQ(inst.space().cartesian_size(), cartesian);
  EXPECT_LT(inst.space().enumerate().size(), cartesian);
  // Every valid config has a launchable geometry within the limits.
  for (const Config& c : inst.space().enumerate()) {
    const LaunchGeometry g = inst.geometry(c);
    ASSERT_LE(g.threads_per_block(), 1024u) << inst.space().key(c);
    ASSERT_GE(g.grid[0], 1u);
    ASSERT_LE(g.shared_mem, std::uint64_t(227 * 1024));
  }
}

// ---------------------------------------------------------------------------------------------
// NVRTC compile-only test of the built-in reduction

TEST_F(Instance, ReduceSampleCompilesForSm90) {
  const KernelInstance inst = reduce();
  const SearchSpace& space = inst.space();
  const std::vector<Config> valid = space.enumerate();
  ASSERT_GT(valid.size(), 100u);

  std::vector<Config> picked;
  std::mt19937_64 rng(20240611);
  std::sample(valid.begin(), valid.end(), std::back_inserter(picked), 30, rng);
  // Every variant at least once, and the register limit and launch bounds switched on.
  const std::size_t variant = space.param_index("variant");
  const std::vector<Value>& variants_declared = space.params()[variant].values;
  ASSERT_GE(variants_declared.size(), 7u);  // the lecture's seven steps at least
  for (const Value& v : variants_declared) {
    auto it = std::find_if(valid.begin(), valid.end(),
                           [&](const Config& c) { return space.value(c, variant) == v; });
    ASSERT_NE(it, valid.end()) << "no valid config of variant " << v.to_string();
    picked.push_back(*it);
  }
  picked.push_back(space.from_assignments(
      {{"block_size", "1024"}, {"maxrregcount", "32"}, {"launch_bounds", "2"}}));
  picked.push_back(space.from_assignments(
      {{"block_size", "32"}, {"variant", "6"}, {"elements_per_thread", "2"}}));
  std::set<std::int64_t> variants;
  for (const Config& c : picked) {
    ASSERT_TRUE(space.is_valid(c)) << space.key(c);
    variants.insert(space.value(c, variant).as_int());
  }
  EXPECT_EQ(variants.size(), variants_declared.size());

  CompilePool pool(2, nullptr);
  std::vector<std::shared_future<CompileResult>> futures;
  for (const Config& c : picked) futures.push_back(pool.submit(render(inst, c, "sm_90")));
  for (std::size_t i = 0; i < picked.size(); ++i) {
    const CompileResult& r = futures[i].get();
    const std::string key = space.key(picked[i]);
    EXPECT_TRUE(r.ok) << key << ": " << r.error << "\n" << r.log;
    if (!r.ok) continue;
    EXPECT_TRUE(r.cubin.starts_with("\177ELF")) << key;
    EXPECT_TRUE(contains(r.lowered_name, "reduce")) << key;
    EXPECT_GT(r.resources.registers, 0) << key;
    const std::int64_t limit = space.value(picked[i], space.param_index("maxrregcount")).as_int();
    if (limit > 0) {
      EXPECT_LE(r.resources.registers, limit) << key;
    }
  }
}

}  // namespace
}  // namespace ktune
