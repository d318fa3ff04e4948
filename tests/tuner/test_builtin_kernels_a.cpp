// The built-in kernels transpose, matmul, copy, reduce and reduce_f32 without a GPU: each is
// registered and validates; a seeded sample of its valid space, its default and every variant
// compile with NVRTC for sm_90; its host reference computes the right answer on a tiny hand-made
// problem; its launch geometry, buffer sizes, arguments and metrics evaluate for problem sizes that
// are no multiple of any block or tile; and its restrictions encode the device limits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <future>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "ktune/compiler.h"
#include "ktune/error.h"
#include "ktune/instance.h"
#include "ktune/job.h"
#include "ktune/registry.h"

namespace ktune {
namespace {

using Sets = std::map<std::string, std::string>;
using Dim3 = std::array<std::uint32_t, 3>;

class BuiltinA : public ::testing::Test {
 protected:
  void SetUp() override { register_builtin_kernels(registry_); }
  KernelInstance instance(const std::string& kernel,
                          const std::map<std::string, std::int64_t>& problem = {},
                          const DeviceLimits& limits = DeviceLimits::for_arch(90)) const {
    return KernelInstance(registry_.get(kernel), problem, limits);
  }
  static std::int64_t param(const KernelInstance& inst, const Config& c, const std::string& name) {
    return inst.space().value(c, inst.space().param_index(name)).as_int();
  }
  Registry registry_;
};

// Calls a kernel's host reference on hand-made buffers, as the GPU worker does.
struct HostCall {
  std::vector<std::string> names;
  std::vector<std::int64_t> values;
  std::vector<ktune_host_buffer> buffers;
  std::string error;

  int run(const KernelSpec& k) {
    std::vector<const char*> name_ptrs;
    for (const auto& n : names) name_ptrs.push_back(n.c_str());
    ktune_reference_ctx ctx{sizeof(ktune_reference_ctx),
                            names.size(),
                            name_ptrs.data(),
                            values.data(),
                            buffers.size(),
                            buffers.data(),
                            k.user_data};
    char buf[512] = {0};
    const int rc = k.reference(&ctx, buf, sizeof(buf));
    error = buf;
    return rc;
  }
};

ktune_host_buffer host_buffer(const char* name, ktune_buffer_role role, std::vector<float>& data) {
  return {name, KTUNE_TYPE_F32, role, data.size(), data.data()};
}

// ---------------------------------------------------------------------------------------------
// Registration

TEST_F(BuiltinA, KernelsAreRegisteredAndValidate) {
  for (const char* name : {"transpose", "matmul", "copy", "reduce_f32"}) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(registry_.contains(name));
    const KernelSpec& k = registry_.get(name);
    EXPECT_NO_THROW(k.validate());
    EXPECT_EQ(k.origin, "builtin");
    EXPECT_FALSE(k.description.empty());
    EXPECT_FALSE(k.bytes.empty());
    // Batched compilation needs templates without #include and extern "C".
    EXPECT_EQ(k.source.find("#include"), std::string::npos);
    EXPECT_EQ(k.source.find("extern \"C\""), std::string::npos);
    // The default configuration is valid on sm_90 at the default problem.
    const KernelInstance inst = instance(name);
    EXPECT_TRUE(inst.space().is_valid(inst.space().default_config()))
        << inst.space().violated(inst.space().default_config()).value_or("");
  }
  // Host references where the host can afford the problem; matmul names a configuration, and so
  // does copy, whose plainest configuration is its reference (made on the GPU from inputs made
  // there, so 1 GiB never passes through the host).
  EXPECT_NE(registry_.get("transpose").reference, nullptr);
  EXPECT_NE(registry_.get("reduce_f32").reference, nullptr);
  for (const char* name : {"matmul", "copy"}) {
    EXPECT_EQ(registry_.get(name).reference, nullptr) << name;
    EXPECT_FALSE(registry_.get(name).reference_config.empty()) << name;
  }
  EXPECT_FALSE(registry_.get("matmul").flops.empty());
}

TEST_F(BuiltinA, ReduceF32SharesTheReductionButNotItsTypes) {
  const KernelSpec& i32 = registry_.get("reduce");
  const KernelSpec& f32 = registry_.get("reduce_f32");
  EXPECT_EQ(f32.source, i32.source);
  EXPECT_EQ(f32.entry, "reduce<BLOCK_SIZE, VARIANT, ELEMENTS_PER_THREAD, float>");
  EXPECT_EQ(i32.entry, "reduce<BLOCK_SIZE, VARIANT, ELEMENTS_PER_THREAD, int>");
  // reduce_f32 leaves out the one-pass step (the depth bound of its tolerance); every other
  // restriction is reduce's.
  const auto has = [](const KernelSpec& k, const std::string& r) {
    return std::find(k.restrictions.begin(), k.restrictions.end(), r) != k.restrictions.end();
  };
  EXPECT_TRUE(has(f32, "variant <= 9 and blocks_per_sm == 0"));
  EXPECT_FALSE(has(i32, "variant <= 9 and blocks_per_sm == 0"));
  for (const std::string& r : i32.restrictions) {
    if (r.find("10") == std::string::npos) {
      EXPECT_TRUE(has(f32, r)) << r;
    }
  }
  EXPECT_EQ(f32.restrictions.size(), i32.restrictions.size() - 1);
  ASSERT_EQ(f32.params.size(), i32.params.size());
  for (std::size_t p = 0; p < f32.params.size(); ++p)
    EXPECT_EQ(f32.params[p].name, i32.params[p].name);
  EXPECT_EQ(f32.run, i32.run);
  EXPECT_NE(f32.reference, i32.reference);
  for (const BufferSpec& b : f32.buffers) EXPECT_EQ(b.type, ElemType::kF32) << b.name;
  for (const BufferSpec& b : i32.buffers) EXPECT_EQ(b.type, ElemType::kI32) << b.name;
  // Floats need a tolerance; the int32 sum stays exact.
  const auto out = [](const KernelSpec& k) {
    return *std::find_if(k.buffers.begin(), k.buffers.end(),
                         [](const BufferSpec& b) { return b.name == "out"; });
  };
  EXPECT_GT(out(f32).abs_tol, 0);
  EXPECT_LT(out(f32).abs_tol, 0.5);  // below the average |x| of one dropped element
  EXPECT_EQ(out(i32).abs_tol, 0);
  EXPECT_EQ(out(i32).rel_tol, 0);
}

// ---------------------------------------------------------------------------------------------
// NVRTC compile-only: a seeded sample of each space, the default, and every variant

struct SampleCase {
  const char* kernel;
  std::size_t random;         // seeded picks from the valid space
  const char* variant_param;  // one config per value of it (nullptr: none)
};

class BuiltinASample : public BuiltinA, public ::testing::WithParamInterface<SampleCase> {};

TEST_P(BuiltinASample, CompilesForSm90) {
  const SampleCase& sc = GetParam();
  const KernelInstance inst = instance(sc.kernel);
  const SearchSpace& space = inst.space();
  const std::vector<Config> valid = space.enumerate();
  ASSERT_GT(valid.size(), sc.random);

  std::vector<Config> picked{space.default_config()};
  std::mt19937_64 rng(20250301);
  std::sample(valid.begin(), valid.end(), std::back_inserter(picked), sc.random, rng);
  if (sc.variant_param != nullptr) {
    const std::size_t v = space.param_index(sc.variant_param);
    for (const Value& value : space.params()[v].values) {
      // The default with only the variant changed where that is valid, else any config of it.
      std::vector<Value> values = space.values(space.default_config());
      auto it = std::find_if(valid.begin(), valid.end(), [&](const Config& c) {
        if (space.value(c, v) != value) return false;
        for (std::size_t p = 0; p < space.size(); ++p)
          if (p != v && space.value(c, p) != values[p]) return false;
        return true;
      });
      if (it == valid.end())
        it = std::find_if(valid.begin(), valid.end(),
                          [&](const Config& c) { return space.value(c, v) == value; });
      // reduce_f32 shares reduce's parameters but has no step 10 (its tolerance's depth bound).
      if (it == valid.end() && std::string(sc.kernel) == "reduce_f32" && value == Value(10))
        continue;
      ASSERT_NE(it, valid.end()) << "no valid config with " << sc.variant_param << "="
                                 << value.to_string();
      picked.push_back(*it);
    }
  }
  if (std::string(sc.kernel) == "matmul") {
    picked.push_back(space.from_assignments(registry_.get("matmul").reference_assignments()));
    // The largest tiles: dynamic shared memory above 48 KiB.
    picked.push_back(space.from_assignments({{"block_m", "256"},
                                             {"block_n", "256"},
                                             {"block_k", "32"},
                                             {"thread_m", "16"},
                                             {"thread_n", "4"},
                                             {"unroll", "4"}}));
  }
  for (const Config& c : picked) ASSERT_TRUE(space.is_valid(c)) << space.key(c);

  CompilePool pool(2, nullptr);
  std::vector<std::shared_future<CompileResult>> futures;
  for (const Config& c : picked) futures.push_back(pool.submit(render(inst, c, "sm_90")));
  for (std::size_t i = 0; i < picked.size(); ++i) {
    const CompileResult& r = futures[i].get();
    const std::string key = space.key(picked[i]);
    EXPECT_TRUE(r.ok) << key << ": " << r.error << "\n" << r.log;
    if (!r.ok) continue;
    EXPECT_NE(r.lowered_name.find(sc.kernel == std::string("reduce_f32") ? "reduce" : sc.kernel),
              std::string::npos)
        << key << ": " << r.lowered_name;
    EXPECT_GT(r.resources.registers, 0) << key;
    if (auto p = space.find_param("maxrregcount")) {
      const std::int64_t limit = space.value(picked[i], *p).as_int();
      if (limit > 0) EXPECT_LE(r.resources.registers, limit) << key;
    }
    if (std::string(sc.kernel) == "matmul") {
      // The kernel declares its block size, so every block can launch: at 1024 threads, 64
      // registers a thread at most.
      EXPECT_LE(std::int64_t{r.resources.registers} *
                    std::int64_t(inst.geometry(picked[i]).threads_per_block()),
                inst.limits().max_registers_per_block)
          << key;
    }
    if (i == 0) {
      // The default is meant to be fast: no local-memory spills.
      EXPECT_EQ(r.resources.spill_store_bytes, 0) << key << "\n" << r.log;
    }
    if (std::string(sc.kernel) == "transpose") {
      // The tile reaches the source: tile x (tile + padding) floats of static shared memory.
      const std::int64_t tile = param(inst, picked[i], "tile");
      const std::int64_t expect = param(inst, picked[i], "variant") == 2
                                      ? tile * (tile + param(inst, picked[i], "padding")) * 4
                                      : 0;
      EXPECT_EQ(std::max(r.resources.static_shared_bytes, 0), expect) << key;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, BuiltinASample,
                         ::testing::Values(SampleCase{"transpose", 20, "variant"},
                                           SampleCase{"matmul", 10, "variant"},
                                           SampleCase{"copy", 20, "vector_width"},
                                           SampleCase{"reduce", 10, "variant"},
                                           SampleCase{"reduce_f32", 20, "variant"}),
                         [](const auto& info) { return std::string(info.param.kernel); });

// ---------------------------------------------------------------------------------------------
// Host references on tiny problems

TEST_F(BuiltinA, TransposeReferenceTransposes) {
  const KernelSpec& k = registry_.get("transpose");
  std::vector<float> in(3 * 5), out(3 * 5, -1.0f);
  std::iota(in.begin(), in.end(), 0.0f);  // in[r][c] = 5 r + c
  HostCall call{
      {"rows", "cols"},
      {3, 5},
      {host_buffer("in", KTUNE_BUFFER_INPUT, in), host_buffer("out", KTUNE_BUFFER_OUTPUT, out)}};
  ASSERT_EQ(call.run(k), 0) << call.error;
  // out is 5 x 3: out[c][r] = in[r][c].
  EXPECT_EQ(out, (std::vector<float>{0, 5, 10, 1, 6, 11, 2, 7, 12, 3, 8, 13, 4, 9, 14}));

  // A transposition of several bands of the reference's 64 x 64 blocks (each band on its own
  // thread), neither side a multiple.
  const std::int64_t rows = 300, cols = 131;
  std::vector<float> big(rows * cols), big_out(rows * cols, -1.0f);
  std::iota(big.begin(), big.end(), 0.0f);
  HostCall call2{{"rows", "cols"},
                 {rows, cols},
                 {host_buffer("in", KTUNE_BUFFER_INPUT, big),
                  host_buffer("out", KTUNE_BUFFER_OUTPUT, big_out)}};
  ASSERT_EQ(call2.run(k), 0) << call2.error;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c)
      ASSERT_EQ(big_out[c * rows + r], big[r * cols + c]) << r << "," << c;

  // Sizes that do not match the problem are an error with a message, not a crash.
  HostCall bad{
      {"rows", "cols"},
      {4, 5},
      {host_buffer("in", KTUNE_BUFFER_INPUT, in), host_buffer("out", KTUNE_BUFFER_OUTPUT, out)}};
  EXPECT_NE(bad.run(k), 0);
  EXPECT_NE(bad.error.find("transpose"), std::string::npos) << bad.error;
}

TEST_F(BuiltinA, CopysReferenceIsItsPlainestConfigurationWhateverAJobNarrows) {
  const KernelSpec& k = registry_.get("copy");
  // The copy is exact: no tolerance on its output.
  for (const BufferSpec& b : k.buffers) {
    EXPECT_EQ(b.abs_tol, 0) << b.name;
    EXPECT_EQ(b.rel_tol, 0) << b.name;
  }
  const auto ref = k.reference_assignments();
  EXPECT_EQ(ref.at("variant"), "0");
  EXPECT_EQ(ref.at("vector_width"), "1");
  EXPECT_EQ(ref.at("unroll"), "1");
  EXPECT_EQ(ref.at("cache_hint"), "0");
  // A job that leaves none of the reference's values in its lists (the one-pass variant of
  // float4s only): the reference is still found, in the kernel's declared space, and is valid
  // there at a size that is not a multiple of anything.
  JobFile job;
  job.space = {{"variant", {Value(2)}}, {"vector_width", {Value(4)}}, {"unroll", {Value(8)}}};
  job.restrictions = {"block_size >= 512"};
  const KernelSpec narrowed = apply_job(k, job);
  EXPECT_EQ(narrowed.reference_assignments(), ref);
  const KernelSpec declared = narrowed.declared();
  ASSERT_EQ(declared.params.size(), k.params.size());
  for (std::size_t i = 0; i < k.params.size(); ++i)
    EXPECT_EQ(declared.params[i].values, k.params[i].values) << k.params[i].name;
  EXPECT_EQ(declared.restrictions, k.restrictions);
  const KernelInstance inst(declared, {{"n", 1000003}}, DeviceLimits::for_arch(90));
  const Config config = inst.space().from_assignments(ref);
  EXPECT_TRUE(inst.space().is_valid(config)) << inst.space().violated(config).value_or("");
  // Narrowing twice keeps the first declared space.
  JobFile again;
  again.space = {{"block_size", {Value(1024)}}};
  EXPECT_EQ(apply_job(narrowed, again).declared().params[0].values, k.params[0].values);
}

TEST_F(BuiltinA, ReduceF32ReferenceSumsInDouble) {
  const KernelSpec& k = registry_.get("reduce_f32");
  // In float, 1e8 + 1 is 1e8 (its spacing there is 8), so a float sum gives 1, not 2.
  std::vector<float> in{1e8f, 1.0f, -1e8f, 1.0f}, out{-5.0f};
  HostCall call{
      {"n"},
      {4},
      {host_buffer("in", KTUNE_BUFFER_INPUT, in), host_buffer("out", KTUNE_BUFFER_OUTPUT, out)}};
  ASSERT_EQ(call.run(k), 0) << call.error;
  EXPECT_EQ(out[0], 2.0f);

  std::vector<float> seq(1000);
  for (std::size_t i = 0; i < seq.size(); ++i) seq[i] = 0.001f * static_cast<float>(i % 7) - 0.002f;
  double want = 0;
  for (float x : seq) want += x;
  HostCall call2{
      {"n"},
      {1000},
      {host_buffer("in", KTUNE_BUFFER_INPUT, seq), host_buffer("out", KTUNE_BUFFER_OUTPUT, out)}};
  ASSERT_EQ(call2.run(k), 0) << call2.error;
  EXPECT_EQ(out[0], static_cast<float>(want));
}

TEST_F(BuiltinA, MatmulReferenceIsTheLectureKernelWithoutOptIn) {
  const KernelSpec& k = registry_.get("matmul");
  for (const auto& problem :
       {std::map<std::string, std::int64_t>{},
        std::map<std::string, std::int64_t>{{"m", 1000}, {"n", 777}, {"k", 513}}}) {
    const KernelInstance inst = instance("matmul", problem);
    const Config ref = inst.space().from_assignments(k.reference_assignments());
    ASSERT_TRUE(inst.space().is_valid(ref)) << inst.space().violated(ref).value_or("");
    EXPECT_EQ(param(inst, ref, "variant"), 1);
    EXPECT_EQ(param(inst, ref, "maxrregcount"), 0);
    EXPECT_EQ(param(inst, ref, "launch_bounds"), 0);
    const LaunchGeometry g = inst.geometry(ref);
    EXPECT_EQ(g.block, (Dim3{32, 32, 1}));
    // The worker runs the reference without raising the dynamic shared memory limit.
    EXPECT_LE(g.shared_mem, 48u * 1024);
    EXPECT_EQ(g.shared_mem, 2u * 32 * 32 * 4);
  }
  // C is compared with a tolerance; the inputs are never compared.
  for (const BufferSpec& b : k.buffers) {
    if (b.role == BufferRole::kOutput) {
      EXPECT_GT(b.abs_tol, 0);
      EXPECT_LE(b.abs_tol, 1e-2);
      EXPECT_GT(b.rel_tol, 0);
      EXPECT_LE(b.rel_tol, 1e-3);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Geometry, buffers, arguments and metrics at sizes no tile divides

TEST_F(BuiltinA, TransposeGeometryForANonMultipleSize) {
  const KernelInstance inst = instance("transpose", {{"rows", 1000}, {"cols", 777}});
  const Config def = inst.space().default_config();
  EXPECT_EQ(param(inst, def, "tile"), 32);
  EXPECT_EQ(param(inst, def, "padding"), 1);  // the lecture's 32 x 33
  EXPECT_EQ(param(inst, def, "variant"), 2);
  LaunchGeometry g = inst.geometry(def);
  EXPECT_EQ(g.grid, (Dim3{25, 32, 1}));  // ceil(777 / 32), ceil(1000 / 32)
  EXPECT_EQ(g.block, (Dim3{32, 8, 1}));
  EXPECT_EQ(g.shared_mem, 0u);  // static
  EXPECT_EQ(inst.buffer_sizes(def), (std::vector<std::uint64_t>{777000, 777000}));
  EXPECT_DOUBLE_EQ(inst.bytes(def), 2.0 * 4 * 777000);
  const std::vector<ScalarArg> args = inst.scalar_args(def);
  ASSERT_EQ(args.size(), 4u);
  std::uint32_t rows = 0, cols = 0;
  std::memcpy(&rows, args[2].bytes.data(), 4);
  std::memcpy(&cols, args[3].bytes.data(), 4);
  EXPECT_EQ(rows, 1000u);
  EXPECT_EQ(cols, 777u);

  g = inst.geometry(inst.space().from_assignments({{"tile", "64"}, {"rows_per_block", "16"}}));
  EXPECT_EQ(g.grid, (Dim3{13, 16, 1}));
  EXPECT_EQ(g.threads_per_block(), 1024u);
}

TEST_F(BuiltinA, MatmulGeometryForANonMultipleSize) {
  const KernelInstance inst = instance("matmul", {{"m", 1000}, {"n", 777}, {"k", 513}});
  const Config def = inst.space().default_config();
  EXPECT_EQ(param(inst, def, "variant"), 2);
  const LaunchGeometry g = inst.geometry(def);
  // 128 x 128 tiles of C, 8 x 8 per thread.
  EXPECT_EQ(g.grid, (Dim3{7, 8, 1}));
  EXPECT_EQ(g.block, (Dim3{16, 16, 1}));
  EXPECT_EQ(g.shared_mem, 4u * (8 * 132 + 8 * 132));
  EXPECT_EQ(inst.buffer_sizes(def),
            (std::vector<std::uint64_t>{1000 * 513, 513 * 777, 1000 * 777}));
  EXPECT_DOUBLE_EQ(inst.flops(def), 2.0 * 1000 * 777 * 513);
  EXPECT_DOUBLE_EQ(inst.bytes(def), 4.0 * (1000 * 513 + 513 * 777 + 1000 * 777));
  const std::vector<ScalarArg> args = inst.scalar_args(def);
  ASSERT_EQ(args.size(), 6u);
  std::uint32_t v[3];
  for (int i = 0; i < 3; ++i) std::memcpy(&v[i], args[3 + i].bytes.data(), 4);
  EXPECT_EQ(v[0], 1000u);
  EXPECT_EQ(v[1], 777u);
  EXPECT_EQ(v[2], 513u);

  // Odd padding: tile A's rows still start the tile of B 16 bytes aligned.
  const Config odd = inst.space().from_assignments({{"block_m", "64"},
                                                    {"block_n", "32"},
                                                    {"block_k", "8"},
                                                    {"thread_m", "4"},
                                                    {"thread_n", "4"},
                                                    {"padding", "1"}});
  ASSERT_TRUE(inst.space().is_valid(odd)) << inst.space().violated(odd).value_or("");
  EXPECT_EQ(inst.geometry(odd).shared_mem, 4u * (8 * 65 /* 520, a multiple of 4 */ + 8 * 33));
  const Config odd2 = inst.space().from_assignments({{"block_m", "16"},
                                                     {"block_n", "128"},
                                                     {"block_k", "8"},
                                                     {"thread_m", "1"},
                                                     {"thread_n", "8"},
                                                     {"padding", "1"},
                                                     {"vector_width", "4"}});
  ASSERT_TRUE(inst.space().is_valid(odd2)) << inst.space().violated(odd2).value_or("");
  EXPECT_EQ(inst.geometry(odd2).shared_mem, 4u * (136 /* 8 * 17 rounded up */ + 8 * 129));
}

TEST_F(BuiltinA, CopyGeometryForANonMultipleSize) {
  const KernelInstance inst = instance("copy", {{"n", 1000003}});
  const Config def = inst.space().default_config();
  const LaunchGeometry g = inst.geometry(def);
  // A resident wave: blocks per multiprocessor times the 132 multiprocessors of an H100.
  EXPECT_EQ(g.grid[0], static_cast<std::uint32_t>(param(inst, def, "blocks_per_sm") * 132));
  EXPECT_EQ(g.block[0], static_cast<std::uint32_t>(param(inst, def, "block_size")));
  EXPECT_EQ(param(inst, def, "vector_width"), 4);
  EXPECT_EQ(inst.buffer_sizes(def), (std::vector<std::uint64_t>{1000003, 1000003}));
  EXPECT_DOUBLE_EQ(inst.bytes(def), 8.0 * 1000003);
  const std::vector<ScalarArg> args = inst.scalar_args(def);
  ASSERT_EQ(args.size(), 3u);
  EXPECT_EQ(args[2].type, ElemType::kU64);
  std::uint64_t n = 0;
  std::memcpy(&n, args[2].bytes.data(), 8);
  EXPECT_EQ(n, 1000003u);
  // The grid follows the device: 84 multiprocessors on sm_86.
  const KernelInstance ampere = instance("copy", {{"n", 1000003}}, DeviceLimits::for_arch(86));
  EXPECT_EQ(ampere.geometry(ampere.space().default_config()).grid[0],
            static_cast<std::uint32_t>(param(inst, def, "blocks_per_sm") * 84));
}

TEST_F(BuiltinA, ReduceF32GeometryForANonMultipleSize) {
  const KernelInstance inst = instance("reduce_f32", {{"n", 1000003}});
  const Config def = inst.space().default_config();
  const LaunchGeometry g = inst.geometry(def);
  EXPECT_EQ(g.grid[0], 489u);  // ceil(1000003 / (256 * 8))
  const std::vector<std::uint64_t> sizes = inst.buffer_sizes(def);
  ASSERT_EQ(sizes.size(), 3u);
  EXPECT_EQ(sizes[0], 1000003u);
  EXPECT_EQ(sizes[1], 1u);
  EXPECT_GE(sizes[2], 489u + 1u);  // both levels of partial sums
  EXPECT_DOUBLE_EQ(inst.bytes(def), 4.0 * 1000003);
}

// Step 10 launches once: a block per tile, or with blocks_per_sm at most that many blocks per
// multiprocessor, never more blocks than tiles; its partial sums fit the scratch buffer.
TEST_F(BuiltinA, ReduceOnePassGeometry) {
  const KernelInstance inst = instance("reduce", {{"n", 1000003}});
  const SearchSpace& space = inst.space();
  const auto config = [&](const char* per_sm) {
    return space.from_assignments({{"variant", "10"},
                                   {"block_size", "256"},
                                   {"elements_per_thread", "8"},
                                   {"blocks_per_sm", per_sm}});
  };
  EXPECT_EQ(inst.geometry(config("0")).grid[0], 489u);  // ceil(1000003 / (256 * 8))
  EXPECT_EQ(inst.geometry(config("2")).grid[0], 264u);  // 2 x 132 multiprocessors
  EXPECT_EQ(inst.geometry(config("4")).grid[0], 489u);  // 528 > 489 tiles
  for (const char* per_sm : {"0", "1", "32"}) {
    ASSERT_TRUE(space.is_valid(config(per_sm))) << per_sm;
    EXPECT_GE(inst.buffer_sizes(config(per_sm))[2], inst.geometry(config(per_sm)).grid[0]);
  }
  // blocks_per_sm belongs to step 10, and step 10 has no register limit.
  EXPECT_FALSE(space.is_valid(space.from_assignments({{"variant", "9"}, {"blocks_per_sm", "4"}})));
  EXPECT_FALSE(space.is_valid(
      space.from_assignments({{"variant", "10"}, {"blocks_per_sm", "4"}, {"maxrregcount", "64"}})));
  // reduce_f32 has no step 10.
  const KernelInstance f32 = instance("reduce_f32", {{"n", 1000003}});
  EXPECT_FALSE(f32.space().is_valid(f32.space().from_assignments({{"variant", "10"}})));
}

// ---------------------------------------------------------------------------------------------
// Restrictions: device limits and the shapes the templates need

TEST_F(BuiltinA, RestrictionsEncodeTheLimits) {
  const auto valid = [&](const KernelInstance& inst, const Sets& sets) {
    return inst.space().is_valid(inst.space().from_assignments(sets));
  };
  const KernelInstance t = instance("transpose");
  EXPECT_TRUE(valid(t, {{"tile", "64"}, {"rows_per_block", "16"}}));   // 1024 threads
  EXPECT_FALSE(valid(t, {{"tile", "64"}, {"rows_per_block", "32"}}));  // 2048 threads
  EXPECT_FALSE(valid(t, {{"tile", "16"}, {"rows_per_block", "32"}}));  // more rows than the tile
  EXPECT_FALSE(valid(t, {{"variant", "1"}, {"padding", "1"}}));        // nothing to pad
  EXPECT_TRUE(valid(t, {{"variant", "1"}, {"padding", "0"}}));

  const KernelInstance m = instance("matmul");
  const Sets big{{"block_m", "256"}, {"block_n", "256"}, {"block_k", "32"}, {"thread_m", "16"},
                 {"thread_n", "4"},  {"padding", "4"},   {"unroll", "4"}};
  EXPECT_TRUE(valid(m, big));  // 66.5 KiB of shared memory: fits sm_90's 227 KiB with opt-in
  const KernelInstance turing = instance("matmul", {}, DeviceLimits::for_arch(75));
  EXPECT_FALSE(valid(turing, big));                                 // but not the 64 KiB of sm_75
  EXPECT_FALSE(valid(m, {{"thread_m", "1"}, {"thread_n", "1"}}));   // 128 x 128 threads
  EXPECT_FALSE(valid(m, {{"thread_m", "16"}, {"thread_n", "8"}}));  // 128 accumulators
  EXPECT_FALSE(valid(m, {{"unroll", "16"}}));                       // deeper than block_k 8
  EXPECT_FALSE(valid(m, {{"variant", "1"}}));  // the tiled kernel needs square tiles
  EXPECT_TRUE(valid(m, {{"variant", "1"},
                        {"block_m", "16"},
                        {"block_n", "16"},
                        {"block_k", "16"},
                        {"thread_m", "1"},
                        {"thread_n", "1"},
                        {"vector_width", "1"},
                        {"unroll", "4"}}));
  EXPECT_FALSE(valid(m, {{"variant", "1"},
                         {"block_m", "16"},
                         {"block_n", "16"},
                         {"block_k", "16"},
                         {"thread_m", "1"},
                         {"thread_n", "1"},
                         {"vector_width", "4"},
                         {"unroll", "4"}}));
  // 256 threads with a 128-register limit fit the 64 Ki registers of a block; 1024 do not.
  EXPECT_TRUE(valid(m, {{"maxrregcount", "128"}}));
  EXPECT_FALSE(valid(m, {{"maxrregcount", "128"}, {"thread_m", "4"}, {"thread_n", "4"}}));
  // Two blocks of 1024 threads fill a multiprocessor; three would not fit.
  EXPECT_TRUE(valid(m, {{"launch_bounds", "2"}, {"thread_m", "4"}, {"thread_n", "4"}}));

  const KernelInstance c = instance("copy");
  EXPECT_TRUE(valid(c, {{"block_size", "1024"}, {"blocks_per_sm", "2"}}));
  EXPECT_FALSE(
      valid(c, {{"block_size", "1024"}, {"blocks_per_sm", "4"}}));  // > 2048 threads per SM
  EXPECT_TRUE(valid(c, {{"block_size", "64"}, {"blocks_per_sm", "32"}}));
}

}  // namespace
}  // namespace ktune
