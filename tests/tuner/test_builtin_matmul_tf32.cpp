// The TF32 tensor-core matrix multiply (`matmul_tf32`) and the newer parameters of matmul
// (`warp_rows`) and convolution2d (`reg_rows`, `full_unroll`) without a GPU: registration,
// the host reference against a product written out here, restrictions (compute capability,
// warp pieces, warp layouts, accumulators), launch geometry and shared memory for sizes no tile
// divides, and NVRTC compiles of samples for sm_90; matmul_tf32_wgmma and matmul_tf32_tma
// (sm_90a) likewise, the latter's run hook (the tensor maps it passes) on a recording context,
// and the architecture-specific target rule.
#include <cuda.h>  // CUtensorMap (the fake tensor-map encoder of the run hook's test)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "ktune/compiler.h"
#include "ktune/instance.h"
#include "ktune/registry.h"
#include "ktune/render.h"

namespace ktune {
namespace {

using Sets = std::map<std::string, std::string>;
using Dim3 = std::array<std::uint32_t, 3>;

class BuiltinNew : public ::testing::Test {
 protected:
  void SetUp() override { register_builtin_kernels(registry_); }
  KernelInstance instance(const std::string& kernel, const Problem& problem = {},
                          int compute_capability = 90) const {
    return KernelInstance(registry_.get(kernel), problem,
                          DeviceLimits::for_arch(compute_capability));
  }
  Registry registry_;
};

int call_reference(const KernelSpec& k, const Problem& problem, std::vector<float>& a,
                   std::vector<float>& b, std::vector<float>& c, std::string& error) {
  std::vector<std::string> names;
  std::vector<std::int64_t> values;
  for (const auto& [n, v] : problem) {
    names.push_back(n);
    values.push_back(v);
  }
  std::vector<const char*> name_ptrs;
  for (const auto& n : names) name_ptrs.push_back(n.c_str());
  ktune_host_buffer buffers[] = {
      {"a", KTUNE_TYPE_F32, KTUNE_BUFFER_INPUT, a.size(), a.data()},
      {"b", KTUNE_TYPE_F32, KTUNE_BUFFER_INPUT, b.size(), b.data()},
      {"c", KTUNE_TYPE_F32, KTUNE_BUFFER_OUTPUT, c.size(), c.data()},
  };
  ktune_reference_ctx ctx{sizeof(ktune_reference_ctx),
                          names.size(),
                          name_ptrs.data(),
                          values.data(),
                          3,
                          buffers,
                          k.user_data};
  char buf[512] = {0};
  const int rc = k.reference(&ctx, buf, sizeof(buf));
  error = buf;
  return rc;
}

TEST_F(BuiltinNew, MatmulTf32IsRegisteredWithAHostReferenceAndATf32Tolerance) {
  ASSERT_TRUE(registry_.contains("matmul_tf32"));
  const KernelSpec& k = registry_.get("matmul_tf32");
  EXPECT_NO_THROW(k.validate());
  EXPECT_NE(k.reference, nullptr);
  EXPECT_TRUE(k.reference_config.empty());
  for (const BufferSpec& b : k.buffers) {
    if (b.name != "c") continue;
    // Wider than fp32's 5e-3 (TF32 rounds every input), far below a missing 8-deep k slice.
    EXPECT_DOUBLE_EQ(b.abs_tol, 0.1);
    EXPECT_DOUBLE_EQ(b.rel_tol, 1e-3);
  }
  const KernelInstance inst = instance("matmul_tf32");
  EXPECT_TRUE(inst.space().is_valid(inst.space().default_config()));
  EXPECT_EQ(inst.space().enumerate().size(), 2 * 593u);
}

TEST_F(BuiltinNew, MatmulTf32ReferenceIsTheProductInDoubleRoundedOnce) {
  const KernelSpec& k = registry_.get("matmul_tf32");
  // 37 rows: more than two of the reference's blocks of 16, the last one partial.
  const std::int64_t m = 37, n = 11, kk = 29;
  std::vector<float> a(m * kk), b(kk * n), c(m * n, -1.0f);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = std::sin(0.37f * static_cast<float>(i));
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = std::cos(0.11f * static_cast<float>(i));
  std::string error;
  const Problem p{{"m", m}, {"n", n}, {"k", kk}};
  ASSERT_EQ(call_reference(k, p, a, b, c, error), 0) << error;
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (std::int64_t q = 0; q < kk; ++q) s += double(a[i * kk + q]) * double(b[q * n + j]);
      ASSERT_EQ(c[i * n + j], static_cast<float>(s)) << i << "," << j;
    }
  std::vector<float> short_c(5);
  EXPECT_NE(call_reference(k, p, a, b, short_c, error), 0);
  EXPECT_NE(error.find("matmul_tf32"), std::string::npos) << error;
}

TEST_F(BuiltinNew, MatmulTf32NeedsComputeCapability80AndWholeWarpTiles) {
  EXPECT_TRUE(instance("matmul_tf32", {}, 75).space().enumerate().empty());
  EXPECT_FALSE(instance("matmul_tf32", {}, 80).space().enumerate().empty());
  const KernelInstance inst = instance("matmul_tf32");
  for (const Config& c : inst.space().enumerate()) {
    const auto v = [&](const char* p) {
      return inst.space().value(c, inst.space().param_index(p)).as_int();
    };
    ASSERT_EQ(v("block_m") % v("warps_m"), 0);
    ASSERT_EQ((v("block_m") / v("warps_m")) % 16, 0) << inst.space().key(c);
    ASSERT_EQ((v("block_n") / v("warps_n")) % 8, 0) << inst.space().key(c);
    ASSERT_LE((v("block_m") / v("warps_m")) * (v("block_n") / v("warps_n")), 4096);
  }
  // 32 rows over 4 warps leaves 8 per warp: not a whole 16 x 8 tile.
  EXPECT_FALSE(
      inst.space().is_valid(inst.space().from_assignments({{"block_m", "32"}, {"warps_m", "4"}})));
}

TEST_F(BuiltinNew, MatmulTf32GeometryForANonMultipleSize) {
  const KernelInstance inst = instance("matmul_tf32", {{"m", 1000}, {"n", 777}, {"k", 513}});
  const Config def = inst.space().default_config();
  const LaunchGeometry g = inst.geometry(def);
  EXPECT_EQ(g.grid, (Dim3{7, 8, 1}));     // 128 x 128 tiles of C
  EXPECT_EQ(g.block, (Dim3{256, 1, 1}));  // 2 x 4 warps
  // 3 stages of A (128 rows of 32 + 4) and B (32 rows of 128 + 8).
  EXPECT_EQ(g.shared_mem, 4u * 3 * (128 * 36 + 32 * 136));
  const Config small = inst.space().from_assignments({{"block_m", "64"},
                                                      {"block_n", "32"},
                                                      {"block_k", "16"},
                                                      {"warps_m", "2"},
                                                      {"warps_n", "1"},
                                                      {"stages", "4"}});
  ASSERT_TRUE(inst.space().is_valid(small)) << inst.space().violated(small).value_or("");
  EXPECT_EQ(inst.geometry(small).grid, (Dim3{25, 16, 1}));
  EXPECT_EQ(inst.geometry(small).block, (Dim3{64, 1, 1}));
  EXPECT_EQ(inst.geometry(small).shared_mem, 4u * 4 * (64 * 20 + 16 * 40));
  EXPECT_DOUBLE_EQ(inst.flops(def), 2.0 * 1000 * 777 * 513);
}

TEST_F(BuiltinNew, MatmulTf32SamplesCompileForSm90) {
  const KernelInstance inst = instance("matmul_tf32", {{"m", 333}, {"n", 777}, {"k", 513}});
  std::vector<CompileRequest> requests;
  for (const Sets& s : std::vector<Sets>{
           {},
           {{"block_m", "32"},
            {"block_n", "32"},
            {"block_k", "16"},
            {"warps_m", "2"},
            {"warps_n", "4"},
            {"stages", "2"}},
           {{"block_m", "256"},
            {"block_n", "128"},
            {"block_k", "16"},
            {"warps_m", "4"},
            {"warps_n", "2"},
            {"stages", "4"},
            {"convert_in_smem", "1"}},
       }) {
    const Config c = inst.space().from_assignments(s);
    ASSERT_TRUE(inst.space().is_valid(c)) << inst.space().key(c);
    requests.push_back(render(inst, c, "sm_90"));
  }
  for (const CompileResult& r : compile_batch(requests)) {
    ASSERT_TRUE(r.ok) << r.error << "\n" << r.log;
    EXPECT_NE(r.lowered_name.find("matmul_tf32"), std::string::npos) << r.lowered_name;
  }
}

// matmul_tf32_wgmma: Hopper's warpgroup instructions, so sm_90 alone and compiled for sm_90a;
// the same buffers, reference and tolerance as matmul_tf32.
TEST_F(BuiltinNew, WgmmaIsArchSpecificWithMatmulTf32sReferenceAndTolerance) {
  ASSERT_TRUE(registry_.contains("matmul_tf32_wgmma"));
  const KernelSpec& k = registry_.get("matmul_tf32_wgmma");
  EXPECT_NO_THROW(k.validate());
  EXPECT_TRUE(k.arch_specific);
  EXPECT_FALSE(registry_.get("matmul_tf32").arch_specific);
  EXPECT_EQ(k.reference, registry_.get("matmul_tf32").reference);
  for (const BufferSpec& b : k.buffers) {
    if (b.name != "c") continue;
    EXPECT_DOUBLE_EQ(b.abs_tol, 0.1);
    EXPECT_DOUBLE_EQ(b.rel_tol, 1e-3);
  }
  // 903 configurations where every thread loads, in both orders of a step, and 137 with a
  // producer.
  EXPECT_EQ(instance("matmul_tf32_wgmma").space().enumerate().size(), 2 * 903u + 137u);
  for (int cc : {80, 89, 100, 120})
    EXPECT_TRUE(instance("matmul_tf32_wgmma", {}, cc).space().enumerate().empty()) << cc;
  const KernelInstance inst = instance("matmul_tf32_wgmma");
  for (const Config& c : inst.space().enumerate()) {
    const auto v = [&](const char* p) {
      return inst.space().value(c, inst.space().param_index(p)).as_int();
    };
    // At most 128 accumulators per thread, and fewer where 512 threads share the registers.
    ASSERT_LE(v("block_m") * v("tiles_n") / 2, 128) << inst.space().key(c);
    ASSERT_LT(v("block_m") * v("tiles_n") / 2 * 128 * v("warpgroups"), 65536)
        << inst.space().key(c);
    ASSERT_GE(v("stages") - 1 - v("wait_depth"), 1) << inst.space().key(c);  // one loading ahead
    ASSERT_LE(inst.geometry(c).shared_mem, 227u * 1024) << inst.space().key(c);
  }
}

TEST_F(BuiltinNew, WgmmaGeometryForANonMultipleSize) {
  const KernelInstance inst = instance("matmul_tf32_wgmma", {{"m", 333}, {"n", 777}, {"k", 513}});
  const Config def = inst.space().default_config();
  const LaunchGeometry g = inst.geometry(def);
  EXPECT_EQ(g.grid, (Dim3{4, 3, 1}));     // 128 rows x 256 columns of C per block
  EXPECT_EQ(g.block, (Dim3{512, 1, 1}));  // 4 warpgroups
  const Config produced = inst.space().from_assignments(
      {{"producer", "1"}, {"warpgroups", "2"}, {"tiles_n", "2"}, {"products_first", "0"}});
  ASSERT_TRUE(inst.space().is_valid(produced)) << inst.space().violated(produced).value_or("");
  EXPECT_EQ(inst.geometry(produced).block, (Dim3{384, 1, 1}));  // 2 warpgroups and a producer
  EXPECT_EQ(inst.geometry(produced).shared_mem, g.shared_mem + 128);
  // Clusters of 2 and 4 blocks in m: whole clusters, the blocks past m idle.
  EXPECT_EQ(inst.geometry(inst.space().from_assignments({{"cluster_m", "2"}})).grid,
            (Dim3{4, 4, 1}));
  EXPECT_EQ(inst.geometry(inst.space().from_assignments({{"cluster_m", "4"}})).grid,
            (Dim3{4, 4, 1}));
  EXPECT_FALSE(inst.space().is_valid(
      inst.space().from_assignments({{"cluster_m", "2"}, {"producer", "1"}})));
  // A cluster's blocks hold their mbarriers beside the tiles, and pad B's rows by 8 floats.
  EXPECT_EQ(inst.geometry(inst.space().from_assignments({{"cluster_m", "2"}})).shared_mem,
            g.shared_mem + 128 + 3 * 4 * 32 * 8);
  // Alignment, then 3 stages of A (128 rows of 128 bytes) and B (32 rows of 256 floats,
  // swizzled).
  EXPECT_EQ(g.shared_mem, 1024u + 3 * 4 * (32 * 128 + 32 * 256));
  const Config small = inst.space().from_assignments(
      {{"block_m", "64"}, {"tiles_n", "1"}, {"warpgroups", "3"}, {"stages", "3"}});
  ASSERT_TRUE(inst.space().is_valid(small)) << inst.space().violated(small).value_or("");
  EXPECT_EQ(inst.geometry(small).grid, (Dim3{5, 6, 1}));
  EXPECT_EQ(inst.geometry(small).block, (Dim3{384, 1, 1}));
}

TEST_F(BuiltinNew, WgmmaRendersForSm90aAndSamplesCompile) {
  const KernelInstance inst = instance("matmul_tf32_wgmma", {{"m", 333}, {"n", 777}, {"k", 513}});
  std::vector<CompileRequest> requests;
  for (const Sets& s : std::vector<Sets>{
           {},
           {{"block_m", "64"}, {"tiles_n", "1"}, {"warpgroups", "1"}, {"stages", "3"}},
           {{"block_m", "192"},
            {"tiles_n", "1"},
            {"warpgroups", "3"},
            {"stages", "4"},
            {"wait_depth", "0"},
            {"products_first", "0"}},  // (with its products first: 8 bytes spilled)
           {{"block_m", "256"},
            {"tiles_n", "1"},
            {"warpgroups", "2"},
            {"stages", "3"},
            {"a_registers", "0"}},
           {{"block_m", "192"},
            {"block_k", "64"},
            {"tiles_n", "1"},
            {"warpgroups", "2"},
            {"stages", "2"},
            {"wait_depth", "0"},
            {"a_registers", "0"}},
           {{"block_m", "128"},
            {"tiles_n", "1"},
            {"warpgroups", "2"},
            {"stages", "2"},
            {"wait_depth", "0"},
            {"a_registers", "0"}},
           {{"block_m", "128"},
            {"tiles_n", "2"},
            {"warpgroups", "2"},
            {"stages", "4"},
            {"producer", "1"},
            {"products_first", "0"}},
           {{"block_m", "128"},
            {"tiles_n", "1"},
            {"warpgroups", "4"},
            {"stages", "2"},
            {"wait_depth", "0"},
            {"cluster_m", "4"}},
       }) {
    const Config c = inst.space().from_assignments(s);
    ASSERT_TRUE(inst.space().is_valid(c)) << inst.space().key(c);
    CompileRequest r = render(inst, c, "sm_90");
    EXPECT_EQ(r.arch, "sm_90a");
    EXPECT_NE(std::find(r.options.begin(), r.options.end(), "--gpu-architecture=sm_90a"),
              r.options.end());
    EXPECT_EQ(std::find(r.options.begin(), r.options.end(), "--gpu-architecture=sm_90"),
              r.options.end());
    requests.push_back(std::move(r));
  }
  const std::vector<CompileResult> results = compile_batch(requests);
  for (std::size_t i = 0; i < results.size(); ++i) {
    const CompileResult& r = results[i];
    ASSERT_TRUE(r.ok) << r.error << "\n" << r.log;
    EXPECT_EQ(r.arch, "sm_90a");
    EXPECT_NE(r.lowered_name.find("matmul_tf32_wgmma"), std::string::npos) << r.lowered_name;
    // The accumulators and fragments fit, also in the default's 512 threads of at most 128
    // registers each.
    EXPECT_EQ(r.resources.spill_store_bytes, 0) << "sample " << i << "\n" << r.log;
  }
  // Without the architecture-specific target, ptxas refuses wgmma.
  CompileRequest plain = render(inst, inst.space().default_config(), "sm_90");
  for (auto& o : plain.options)
    if (o == "--gpu-architecture=sm_90a") o = "--gpu-architecture=sm_90";
  plain.arch = "sm_90";
  plain.batch_group.clear();
  const CompileResult refused = compile(plain);
  EXPECT_FALSE(refused.ok);
  EXPECT_NE(refused.log.find("wgmma"), std::string::npos) << refused.log;
}

// matmul_tf32_tma: warp-specialised, tiles by the TMA through tensor maps its run hook builds;
// sm_90 alone, compiled for sm_90a, matmul_tf32's buffers, reference and tolerance.
TEST_F(BuiltinNew, TmaIsArchSpecificWithARunHookAndMatmulTf32sReference) {
  ASSERT_TRUE(registry_.contains("matmul_tf32_tma"));
  const KernelSpec& k = registry_.get("matmul_tf32_tma");
  EXPECT_NO_THROW(k.validate());
  EXPECT_TRUE(k.arch_specific);
  EXPECT_NE(k.run, nullptr);  // the tensor maps take the places of a's and b's pointers
  EXPECT_EQ(k.reference, registry_.get("matmul_tf32").reference);
  for (const BufferSpec& b : k.buffers) {
    if (b.name != "c") continue;
    EXPECT_DOUBLE_EQ(b.abs_tol, 0.1);
    EXPECT_DOUBLE_EQ(b.rel_tol, 1e-3);
  }
  // 495 without clusters, 495 in clusters of 2, 327 in clusters of 4 (not with 3 consumers:
  // 6 boxes of B).
  EXPECT_EQ(instance("matmul_tf32_tma").space().enumerate().size(), 1317u);
  for (int cc : {80, 89, 100, 120})
    EXPECT_TRUE(instance("matmul_tf32_tma", {}, cc).space().enumerate().empty()) << cc;
  // The TMA's row strides are multiples of 16 bytes: n and k multiples of 4.
  EXPECT_TRUE(instance("matmul_tf32_tma", {{"m", 333}, {"n", 780}, {"k", 516}})
                  .space()
                  .is_valid(instance("matmul_tf32_tma").space().default_config()));
  EXPECT_TRUE(instance("matmul_tf32_tma", {{"m", 512}, {"n", 777}, {"k", 512}})
                  .space()
                  .enumerate()
                  .empty());
  EXPECT_TRUE(instance("matmul_tf32_tma", {{"m", 512}, {"n", 512}, {"k", 513}})
                  .space()
                  .enumerate()
                  .empty());
  const KernelInstance inst = instance("matmul_tf32_tma");
  for (const Config& c : inst.space().enumerate()) {
    const auto v = [&](const char* p) {
      return inst.space().value(c, inst.space().param_index(p)).as_int();
    };
    // The producer never waits on a stage only its own later work frees.
    ASSERT_LE(v("lag") + v("wait_depth"), v("stages") - 1) << inst.space().key(c);
    // 4 consumers leave 112 registers each: at most 64 accumulators and one fragment set,
    // or 32 and two.
    if (v("warpgroups") == 4)
      ASSERT_LE(v("block_m") / 2 + 16 * (1 + v("wait_depth")), 88) << inst.space().key(c);
    ASSERT_LE(inst.geometry(c).shared_mem, 227u * 1024) << inst.space().key(c);
    // Each block of a cluster copies whole 32-column boxes of B.
    ASSERT_EQ(2 * v("warpgroups") % v("cluster_m"), 0) << inst.space().key(c);
  }
}

TEST_F(BuiltinNew, TmaGeometryForANonMultipleSize) {
  const KernelInstance inst = instance("matmul_tf32_tma", {{"m", 333}, {"n", 780}, {"k", 516}});
  const LaunchGeometry g = inst.geometry(inst.space().default_config());
  EXPECT_EQ(g.grid, (Dim3{4, 3, 1}));     // 128 rows x 256 columns of C per block
  EXPECT_EQ(g.block, (Dim3{640, 1, 1}));  // 4 consumer warpgroups and the producer
  // Alignment and the mbarriers, then 4 stages of A (128 x 32 floats) and B (32 x 256).
  EXPECT_EQ(g.shared_mem, 1280u + 4 * 4 * (128 * 32 + 32 * 256));
  const Config two = inst.space().from_assignments({{"block_m", "256"},
                                                    {"warpgroups", "2"},
                                                    {"stages", "3"},
                                                    {"wait_depth", "1"},
                                                    {"lag", "1"}});
  ASSERT_TRUE(inst.space().is_valid(two)) << inst.space().violated(two).value_or("");
  EXPECT_EQ(inst.geometry(two).grid, (Dim3{7, 2, 1}));
  EXPECT_EQ(inst.geometry(two).block, (Dim3{384, 1, 1}));
  // Whole clusters in m: 3 block rows of 128 launch as 2 clusters of 2 or 1 of 4.
  for (const char* cluster : {"2", "4"}) {
    const Config c = inst.space().from_assignments({{"cluster_m", cluster}});
    ASSERT_TRUE(inst.space().is_valid(c)) << inst.space().violated(c).value_or("");
    EXPECT_EQ(inst.geometry(c).grid, (Dim3{4, 4, 1})) << cluster;
    EXPECT_EQ(inst.geometry(c).shared_mem, g.shared_mem) << cluster;
  }
  EXPECT_FALSE(inst.space().is_valid(
      inst.space().from_assignments({{"warpgroups", "3"}, {"cluster_m", "4"}})));
}

TEST_F(BuiltinNew, TmaRendersForSm90aAndSamplesCompileWithoutSpills) {
  const KernelInstance inst = instance("matmul_tf32_tma", {{"m", 333}, {"n", 780}, {"k", 516}});
  std::vector<CompileRequest> requests;
  for (const Sets& s : std::vector<Sets>{
           {},
           {{"block_m", "64"}, {"warpgroups", "4"}, {"stages", "5"}, {"lag", "3"}},
           {{"block_m", "192"}, {"warpgroups", "3"}, {"wait_depth", "0"}, {"lag", "1"}},
           {{"block_m", "128"}, {"warpgroups", "3"}, {"wait_depth", "1"}, {"lag", "1"}},
           {{"block_m", "256"},
            {"warpgroups", "2"},
            {"stages", "3"},
            {"wait_depth", "1"},
            {"lag", "1"}},
           {{"block_m", "128"}, {"warpgroups", "3"}, {"stages", "2"}, {"lag", "1"}},
           {{"block_m", "128"},
            {"stages", "3"},
            {"lag", "1"},
            {"round_batch", "4"},
            {"cluster_m", "2"}},
           {{"block_m", "64"}, {"warpgroups", "4"}, {"stages", "4"}, {"cluster_m", "4"}},
       }) {
    const Config c = inst.space().from_assignments(s);
    ASSERT_TRUE(inst.space().is_valid(c)) << inst.space().key(c);
    CompileRequest r = render(inst, c, "sm_90");
    EXPECT_EQ(r.arch, "sm_90a");
    requests.push_back(std::move(r));
  }
  const std::vector<CompileResult> results = compile_batch(requests);
  for (std::size_t i = 0; i < results.size(); ++i) {
    const CompileResult& r = results[i];
    ASSERT_TRUE(r.ok) << r.error << "\n" << r.log;
    EXPECT_NE(r.lowered_name.find("matmul_tf32_tma"), std::string::npos) << r.lowered_name;
    // The consumers' registers (after setmaxnreg) hold the accumulators and fragments.
    EXPECT_EQ(r.resources.spill_store_bytes, 0) << "sample " << i << "\n" << r.log;
    // ptxas serialises the products where their registers run short (C7512; a batch's log
    // names each configuration's entry).
    for (std::size_t at = r.log.find("C7512"); at != std::string::npos;
         at = r.log.find("C7512", at + 1)) {
      const std::string line = r.log.substr(at, r.log.find('\n', at) - at);
      EXPECT_EQ(line.find(r.lowered_name), std::string::npos) << "sample " << i << ": " << line;
    }
  }
}

// matmul_tf32_tma's run hook without a GPU: a context whose functions record what the hook
// encodes and launches. The buffers' addresses are only passed on, never dereferenced.
struct Encoded {
  void* address;
  cuuint64_t dims[2], stride;
  cuuint32_t box[2];
  CUtensorMapDataType type;
  CUtensorMapSwizzle swizzle;
};
struct Launched {
  std::uint64_t map_a, map_b;  // the maps' first words: which encode made them
  void* c;
  unsigned m, n, k;
};
struct HookWorld {
  std::map<std::string, std::int64_t> values;
  std::vector<Encoded> encoded;
  std::vector<Launched> launched;
  CUresult encode_result = CUDA_SUCCESS;
  bool has_encode = true;
};
HookWorld* g_world = nullptr;

CUresult fake_encode(CUtensorMap* map, CUtensorMapDataType type, cuuint32_t rank, void* address,
                     const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
                     const cuuint32_t* element_strides, CUtensorMapInterleave interleave,
                     CUtensorMapSwizzle swizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill) {
  EXPECT_EQ(rank, 2u);
  EXPECT_EQ(element_strides[0], 1u);
  EXPECT_EQ(interleave, CU_TENSOR_MAP_INTERLEAVE_NONE);
  g_world->encoded.push_back(
      {address, {dims[0], dims[1]}, strides[0], {box[0], box[1]}, type, swizzle});
  std::memset(map, 0, sizeof *map);
  map->opaque[0] = g_world->encoded.size();
  return g_world->encode_result;
}
void* fake_cuda_function(const char* name) {
  return g_world->has_encode && std::string(name) == "cuTensorMapEncodeTiled"
             ? reinterpret_cast<void*>(&fake_encode)
             : nullptr;
}
int fake_launch(const ktune_run_ctx*, void* kernel, const unsigned*, const unsigned*, std::size_t,
                void** args) {
  EXPECT_EQ(kernel, nullptr);  // the entry
  g_world->launched.push_back({static_cast<const CUtensorMap*>(args[0])->opaque[0],
                               static_cast<const CUtensorMap*>(args[1])->opaque[0],
                               *static_cast<void**>(args[2]), *static_cast<unsigned*>(args[3]),
                               *static_cast<unsigned*>(args[4]), *static_cast<unsigned*>(args[5])});
  return 0;
}
void* fake_buffer(const ktune_run_ctx*, const char* name, std::size_t* count) {
  if (count) *count = 0;
  const std::string n(name);
  return n == "a"   ? reinterpret_cast<void*>(0xa000)
         : n == "b" ? reinterpret_cast<void*>(0xb000)
         : n == "c" ? reinterpret_cast<void*>(0xc000)
                    : nullptr;
}
std::int64_t fake_value(const ktune_run_ctx*, const char* name, int* found) {
  const auto it = g_world->values.find(name);
  if (found) *found = it != g_world->values.end();
  return it != g_world->values.end() ? it->second : 0;
}

TEST_F(BuiltinNew, TmaRunHookPassesTensorMapsOfAAndBInPlaceOfTheirPointers) {
  HookWorld world;
  g_world = &world;
  const ktune_run_fn run = registry_.get("matmul_tf32_tma").run;
  ASSERT_NE(run, nullptr);
  const unsigned grid[3] = {4, 3, 1}, block[3] = {640, 1, 1};
  ktune_run_ctx ctx{};
  ctx.struct_size = sizeof ctx;
  ctx.grid = grid;
  ctx.block = block;
  ctx.launch = &fake_launch;
  ctx.buffer = &fake_buffer;
  ctx.value = &fake_value;
  ctx.cuda_function = &fake_cuda_function;
  char error[256] = "";
  const auto call = [&] {
    error[0] = '\0';
    return run(&ctx, error, sizeof error);
  };

  world.values = {{"m", 333}, {"n", 780}, {"k", 516}, {"block_m", 128}};
  ASSERT_EQ(call(), 0) << error;
  ASSERT_EQ(world.encoded.size(), 2u);
  const Encoded& a = world.encoded[0];
  EXPECT_EQ(a.address, reinterpret_cast<void*>(0xa000));
  EXPECT_EQ(a.dims[0], 516u);  // k innermost, then m
  EXPECT_EQ(a.dims[1], 333u);
  EXPECT_EQ(a.stride, 516u * 4);
  EXPECT_EQ(a.box[0], 32u);
  EXPECT_EQ(a.box[1], 128u);  // block_m rows
  EXPECT_EQ(a.type, CU_TENSOR_MAP_DATA_TYPE_FLOAT32);
  EXPECT_EQ(a.swizzle, CU_TENSOR_MAP_SWIZZLE_128B);
  const Encoded& b = world.encoded[1];
  EXPECT_EQ(b.address, reinterpret_cast<void*>(0xb000));
  EXPECT_EQ(b.dims[0], 780u);  // n innermost, then k
  EXPECT_EQ(b.dims[1], 516u);
  EXPECT_EQ(b.stride, 780u * 4);
  EXPECT_EQ(b.box[0], 32u);
  EXPECT_EQ(b.box[1], 32u);
  EXPECT_EQ(b.swizzle, CU_TENSOR_MAP_SWIZZLE_128B);
  ASSERT_EQ(world.launched.size(), 1u);
  const Launched& l = world.launched[0];
  EXPECT_EQ(l.map_a, 1u);
  EXPECT_EQ(l.map_b, 2u);
  EXPECT_EQ(l.c, reinterpret_cast<void*>(0xc000));
  EXPECT_EQ(l.m, 333u);
  EXPECT_EQ(l.n, 780u);
  EXPECT_EQ(l.k, 516u);

  // The same buffers and shape again (every timed run): the maps are reused.
  ASSERT_EQ(call(), 0) << error;
  EXPECT_EQ(world.encoded.size(), 2u);
  ASSERT_EQ(world.launched.size(), 2u);
  EXPECT_EQ(world.launched[1].map_a, 1u);

  // Another block height: A's box follows it.
  world.values["block_m"] = 64;
  ASSERT_EQ(call(), 0) << error;
  ASSERT_EQ(world.encoded.size(), 4u);
  EXPECT_EQ(world.encoded[2].box[1], 64u);
  EXPECT_EQ(world.launched.back().map_a, 3u);

  // Rows that the TMA cannot address (16-byte strides): an error naming the sizes, no launch.
  world.values["n"] = 777;
  EXPECT_NE(call(), 0);
  EXPECT_NE(std::string(error).find("n = 777"), std::string::npos) << error;
  EXPECT_EQ(world.launched.size(), 3u);

  // An encoder that fails: the error names the matrix, nothing is launched, and the failure is
  // not kept (the next call encodes again).
  world.values["n"] = 784;
  world.encode_result = CUDA_ERROR_INVALID_VALUE;
  EXPECT_NE(call(), 0);
  EXPECT_NE(std::string(error).find("cuTensorMapEncodeTiled for A failed"), std::string::npos)
      << error;
  EXPECT_EQ(world.launched.size(), 3u);
  world.encode_result = CUDA_SUCCESS;
  const std::size_t before = world.encoded.size();
  ASSERT_EQ(call(), 0) << error;
  EXPECT_EQ(world.encoded.size(), before + 2);
  EXPECT_EQ(world.launched.size(), 4u);

  // A driver without the encoder: said so.
  world.has_encode = false;
  world.values["k"] = 520;
  EXPECT_NE(call(), 0);
  EXPECT_NE(std::string(error).find("no cuTensorMapEncodeTiled"), std::string::npos) << error;
  g_world = nullptr;
}

TEST(ArchSpecific, TargetOfEachArchitecture) {
  EXPECT_EQ(arch_specific_target("sm_90"), "sm_90a");
  EXPECT_EQ(arch_specific_target("sm_100"), "sm_100a");
  EXPECT_EQ(arch_specific_target("sm_90a"), "sm_90a");
  EXPECT_EQ(arch_specific_target("sm_89"), "sm_89");  // none before Hopper
  EXPECT_EQ(arch_specific_target("sm_80"), "sm_80");
  EXPECT_EQ(arch_specific_target("compute_90"), "compute_90");
  EXPECT_EQ(arch_specific_target("sm_9x"), "sm_9x");
}

TEST_F(BuiltinNew, MatmulWarpRowsOnlyWhereTheLayoutDiffersAndTiles) {
  const KernelInstance inst = instance("matmul");
  const auto valid = [&](Sets s) {
    s.emplace("variant", "3");
    s.emplace("padding", "4");
    return inst.space().is_valid(inst.space().from_assignments(s));
  };
  // 16 x 16 threads: row order already puts 2 rows of 16 in a warp, so warp_rows = 2 would
  // repeat warp_rows = 0; 4 and 8 differ.
  const Sets square{{"block_m", "128"}, {"block_n", "128"}, {"thread_m", "8"}, {"thread_n", "8"}};
  Sets two = square;
  two["warp_rows"] = "2";
  EXPECT_FALSE(valid(two));
  for (const char* rows : {"4", "8"}) {
    Sets s = square;
    s["warp_rows"] = rows;
    EXPECT_TRUE(valid(s)) << rows;
  }
  // 32 x 32 threads: a warp is one row; 2, 4, 8 rows all differ.
  const Sets wide{{"block_m", "128"}, {"block_n", "128"}, {"thread_m", "4"}, {"thread_n", "4"}};
  for (const char* rows : {"2", "4", "8"}) {
    Sets s = wide;
    s["warp_rows"] = rows;
    EXPECT_TRUE(valid(s)) << rows;
  }
  // Only variant 3 has the layout.
  Sets v2 = square;
  v2["variant"] = "2";
  v2["warp_rows"] = "4";
  EXPECT_FALSE(inst.space().is_valid(inst.space().from_assignments(v2)));
}

TEST_F(BuiltinNew, ConvolutionRegisterBlockingGeometryAndPadding) {
  const KernelInstance inst = instance("convolution2d", {{"h", 1000}, {"w", 999}, {"f", 15}});
  // 48 x 2 threads, 2 groups of 8 rows: 32 output rows per block. The tile is 62 wide; 8 rows
  // apart must be 16 banks apart for a warp that spans two rows: 8 * 62 = 496 = 16 (mod 32), so
  // no padding is needed.
  const Config c48 = inst.space().from_assignments({{"block_size_x", "48"},
                                                    {"block_size_y", "2"},
                                                    {"tile_size_x", "1"},
                                                    {"tile_size_y", "2"},
                                                    {"use_shmem", "1"},
                                                    {"use_padding", "1"},
                                                    {"reg_rows", "8"}});
  ASSERT_TRUE(inst.space().is_valid(c48)) << inst.space().violated(c48).value_or("");
  EXPECT_EQ(inst.geometry(c48).grid, (Dim3{21, 32, 1}));  // ceil(999 / 48), ceil(1000 / 32)
  EXPECT_EQ(inst.geometry(c48).shared_mem, 4u * (2 * 2 * 8 + 14) * 62);
  // 16 x 4 threads, 4 rows each: tile width 30, stride 36 (4 * 36 = 144 = 16 (mod 32)).
  const Config c16 = inst.space().from_assignments({{"block_size_x", "16"},
                                                    {"block_size_y", "4"},
                                                    {"tile_size_x", "1"},
                                                    {"tile_size_y", "1"},
                                                    {"use_shmem", "1"},
                                                    {"use_padding", "1"},
                                                    {"reg_rows", "4"}});
  ASSERT_TRUE(inst.space().is_valid(c16)) << inst.space().violated(c16).value_or("");
  EXPECT_EQ(inst.geometry(c16).grid, (Dim3{63, 63, 1}));  // ceil(999 / 16), ceil(1000 / 16)
  EXPECT_EQ(inst.geometry(c16).shared_mem, 4u * (4 * 4 + 14) * 36);
  // Register blocking reads the shared tile; at most 32 accumulators, 16 fully unrolled.
  EXPECT_FALSE(inst.space().is_valid(
      inst.space().from_assignments({{"use_shmem", "0"}, {"reg_rows", "4"}})));
  EXPECT_FALSE(inst.space().is_valid(inst.space().from_assignments(
      {{"tile_size_x", "2"}, {"tile_size_y", "3"}, {"reg_rows", "8"}})));
  EXPECT_FALSE(inst.space().is_valid(inst.space().from_assignments(
      {{"tile_size_x", "1"}, {"tile_size_y", "3"}, {"reg_rows", "8"}, {"full_unroll", "1"}})));
  EXPECT_FALSE(inst.space().is_valid(
      inst.space().from_assignments({{"reg_rows", "1"}, {"full_unroll", "1"}})));
}

}  // namespace
}  // namespace ktune
